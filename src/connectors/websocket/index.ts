/**
 * The websocket family's declarations (declaration.ts): the source and sink, each a client of a websocket server
 * (`addr` set) or an endpoint of the data server (`addr` empty).
 */
import { lazyModule } from '../../core/lazy.js';
import { provisionCheck, type Declaration, type Threads } from '../declaration.js';
import { TLS, f, sink, source } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the websocket connectors', async () => {
  const [commonModule, sinkModule, sourceModule] = await Promise.all([
    import('./common.js'),
    import('./sink.js'),
    import('./source.js'),
  ]);
  return { ...commonModule, ...sinkModule, ...sourceModule };
});

/**
 * A client may run on any thread; an endpoint is served by the data server on the main thread, which a worker's
 * sources and sinks reach through it (data-relay.ts).
 */
const THREADS: Threads = { worker: true };

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

export const websocketDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'websocket',
    load: impl.load,
    create: (host) => new (impl.get().WebsocketSource)(host.wsEndpoints),
    defaults: 'sources/websocket.yaml',
    meta: source(
      { en_US: 'Receives websocket text messages, as client or as server endpoint.', zh_CN: '接收 websocket 消息。' },
      'sources/builtin/websocket',
      'Websocket',
      [
        f(
          'addr',
          'string',
          '',
          'Address',
          'host:port of a server to connect to; empty serves the path on the data server.',
          {
            connection: true,
          },
        ),
        ...TLS,
      ],
      ['/api/data', 'Path', 'Path of the websocket.'],
    ),
    check: (props) => impl.get().pingWebsocket(text(props.addr), text(props.DATASOURCE), props),
    validate: null,
    threads: THREADS,
  },
  {
    kind: 'sink',
    type: 'websocket',
    load: impl.load,
    create: (host) => new (impl.get().WebsocketSink)(host.wsEndpoints),
    meta: sink(
      { en_US: 'Sends results as websocket text messages.', zh_CN: '通过 websocket 发送结果。' },
      'sinks/builtin/websocket',
      'Websocket',
      [
        f('addr', 'string', '', 'Address', 'host:port of a server; empty serves the path on the data server.', {
          connection: true,
        }),
        f('path', 'string', '', 'Path', 'Path of the websocket.', { optional: false }),
        f('sendError', 'bool', false, 'Send errors', 'Also send {"error": ...} when a result cannot be sent.'),
        ...TLS,
      ],
    ),
    check: (props) => impl.get().pingWebsocket(text(props.addr), text(props.path), props),
    validate: provisionCheck((host) => new (impl.get().WebsocketSink)(host.wsEndpoints)),
    threads: THREADS,
  },
];
