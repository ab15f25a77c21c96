/** The zmq family's declarations (declaration.ts): the SUB source and the PUB sink of libzmq. */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration } from '../declaration.js';
import { f, sink, source } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the zmq connectors', () => import('./zmq.js'));

/**
 * zeromq.js aborts the whole process when a worker thread holding its sockets is terminated (as the pool does to
 * replace a worker), so the sockets stay on the main thread and the rules using them run on a worker (main-relay.ts).
 */
const ZMQ_SOCKETS = 'the zeromq library aborts the process when a worker thread holding its sockets is terminated';

export const zmqDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'zmq',
    load: impl.load,
    create: () => new (impl.get().ZmqSource)(),
    defaults: 'sources/zmq.yaml',
    meta: source(
      { en_US: 'Subscribes to a ZeroMQ publisher.', zh_CN: '订阅 ZeroMQ 发布者。' },
      'sources/plugin/zmq',
      'ZeroMQ',
      [
        f('server', 'string', 'tcp://127.0.0.1:5563', 'Server', 'tcp://host:port of the publisher.', {
          optional: false,
          connection: true,
        }),
      ],
      ['', 'Topic', 'Topic prefix subscribed to; empty receives everything.'],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
    instancesOnMain: ZMQ_SOCKETS,
  },
  {
    kind: 'sink',
    type: 'zmq',
    load: impl.load,
    create: () => new (impl.get().ZmqSink)(),
    meta: sink(
      { en_US: 'Publishes results on a ZeroMQ PUB socket.', zh_CN: '通过 ZeroMQ PUB 套接字发布结果。' },
      'sinks/plugin/zmq',
      'ZeroMQ',
      [
        f('server', 'string', 'tcp://127.0.0.1:5563', 'Server', 'tcp://host:port the PUB socket binds.', {
          optional: false,
          connection: true,
        }),
        f('topic', 'string', '', 'Topic', 'First frame of every message; none when empty.'),
      ],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
    instancesOnMain: ZMQ_SOCKETS,
  },
];
