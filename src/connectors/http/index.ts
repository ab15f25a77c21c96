/**
 * The http family's declarations (declaration.ts): the httppull source and lookup table, which share one puller, the
 * httppush source on the data server, and the rest sink.
 */
import { lazyModule } from '../../core/lazy.js';
import { LOOKUP_THREADS, provisionCheck, type Declaration } from '../declaration.js';
import { COMPRESSIONS, TLS, f, sink, source } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the http connectors', async () => {
  const [pullLookup, pullSource, pushSource, restSink] = await Promise.all([
    import('./pull-lookup.js'),
    import('./pull-source.js'),
    import('./push-source.js'),
    import('./rest-sink.js'),
  ]);
  return { ...pullLookup, ...pullSource, ...pushSource, ...restSink };
});

const HTTP_METHODS = ['get', 'post', 'put', 'delete'];
const BODY_TYPES = ['none', 'text', 'json', 'html', 'xml', 'javascript', 'form'];

const PULL_META = source(
  { en_US: 'Polls an HTTP endpoint at an interval.', zh_CN: '定时请求 HTTP 服务获取数据。' },
  'sources/builtin/http_pull',
  'HTTP pull',
  [
    f('url', 'string', 'http://localhost', 'URL', 'Base URL of the server (http or https); may use templates.', {
      optional: false,
    }),
    f('method', 'string', 'post', 'Method', 'HTTP method.', { values: HTTP_METHODS }),
    f('interval', 'int', 10000, 'Interval', 'Pull period in milliseconds.'),
    f('timeout', 'int', 5000, 'Timeout', 'Request timeout in milliseconds.'),
    f('incremental', 'bool', false, 'Incremental', 'Skip a response equal to the previous one.'),
    f('body', 'string', '', 'Body', 'Request body; may use templates.', { control: 'textarea' }),
    f('bodyType', 'string', 'json', 'Body type', 'Content type of the body.', { values: BODY_TYPES }),
    f('headers', 'object', { Accept: 'application/json' }, 'Headers', 'Request headers; values may use templates.'),
    f(
      'responseType',
      'string',
      'code',
      'Response type',
      'How success is decided: by status code or by a code field of the body.',
      { values: ['code', 'body'] },
    ),
    f('compression', 'string', '', 'Compression', 'Compress requests and accept compressed answers.', {
      values: COMPRESSIONS,
    }),
    f('debugResp', 'bool', false, 'Log responses', 'Log every response.'),
    ...TLS,
  ],
  ['/api/data', 'Path', 'Path appended to the url.'],
);

export const httpDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'httppull',
    load: impl.load,
    create: (host) => new (impl.get().HttpPullSource)(host.formats),
    defaults: 'sources/httppull.yaml',
    meta: PULL_META,
    check: null,
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'lookup',
    type: 'httppull',
    load: impl.load,
    create: () => new (impl.get().HttpPullLookup)(),
    defaults: 'sources/httppull.yaml',
    meta: PULL_META,
    check: null,
    threads: LOOKUP_THREADS,
  },
  {
    kind: 'source',
    type: 'httppush',
    // the endpoints of one server share its data server: one route per method and path
    load: impl.load,
    create: (host) => new (impl.get().HttpPushSource)(host.pushHub),
    defaults: 'sources/httppush.yaml',
    meta: source(
      { en_US: 'Receives data POSTed to the HTTP data server.', zh_CN: '接收推送到 HTTP 数据服务的数据。' },
      'sources/builtin/http_push',
      'HTTP push',
      [f('method', 'string', 'POST', 'Method', 'HTTP method accepted.', { values: ['POST', 'PUT'] })],
      ['/api/data', 'Endpoint', 'Endpoint path on the data server.'],
    ),
    check: null,
    validate: null,
    // the data server listens on the main thread; a worker's sources attach through it (data-relay.ts)
    threads: { worker: true },
  },
  {
    kind: 'sink',
    type: 'rest',
    load: impl.load,
    create: () => new (impl.get().RestSink)(),
    meta: sink(
      { en_US: 'Sends results to an HTTP server.', zh_CN: '将结果发送到 HTTP 服务。' },
      'sinks/builtin/rest',
      'REST',
      [
        f('url', 'string', 'http://localhost', 'URL', 'Target URL; may use templates.', { optional: false }),
        f('method', 'string', 'POST', 'Method', 'HTTP method.', { values: HTTP_METHODS.map((m) => m.toUpperCase()) }),
        f('bodyType', 'string', 'json', 'Body type', 'Content type of the body.', { values: BODY_TYPES }),
        f('timeout', 'int', 5000, 'Timeout', 'Request timeout in milliseconds.'),
        f('headers', 'object', {}, 'Headers', 'Request headers; values may use templates.'),
        f('responseType', 'string', 'code', 'Response type', 'How success is decided.', { values: ['code', 'body'] }),
        f('debugResp', 'bool', false, 'Log responses', 'Log every response.'),
        f('compression', 'string', '', 'Compression', 'Compress request bodies.', { values: COMPRESSIONS }),
        ...TLS,
      ],
    ),
    check: null,
    validate: provisionCheck(() => new (impl.get().RestSink)()),
    threads: { worker: true },
  },
];
