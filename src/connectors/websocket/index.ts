/**
 * The websocket family's declarations (declaration.ts): the source and sink, each a client of a websocket server
 * (`addr` set) or an endpoint of the data server (`addr` empty).
 */
import { provisionCheck, type Declaration, type Threads } from '../declaration.js';
import { TLS, f, sink, source } from '../meta.js';
import { pingWebsocket } from './common.js';
import { WebsocketSink } from './sink.js';
import { WebsocketSource } from './source.js';

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
    create: (host) => new WebsocketSource(host.wsEndpoints),
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
    check: (props) => pingWebsocket(text(props.addr), text(props.DATASOURCE), props),
    validate: null,
    threads: THREADS,
  },
  {
    kind: 'sink',
    type: 'websocket',
    create: (host) => new WebsocketSink(host.wsEndpoints),
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
    check: (props) => pingWebsocket(text(props.addr), text(props.path), props),
    validate: provisionCheck((host) => new WebsocketSink(host.wsEndpoints)),
    threads: THREADS,
  },
];
