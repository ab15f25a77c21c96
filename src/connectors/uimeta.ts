/**
 * UI metadata of the built-in connectors (docs/rest-api.md §16.13): what `GET /metadata/sources`, `/metadata/sinks`,
 * `/metadata/connections` and their `/{name}` forms answer, in the shape of eKuiper's `etc/**.json` metadata files:
 * `about` (author, help link, description), `libs`, `properties` (one descriptor per property: name, default,
 * type, control, optional, values, hint, label) and `node`. The texts are Eddy's own; labels and hints are given
 * in English for both languages.
 */

export interface Lang {
  en_US: string;
  zh_CN: string;
}

export interface FieldMeta {
  name: string;
  default: unknown;
  type: 'string' | 'int' | 'float' | 'bool' | 'list_string' | 'list_object' | 'object';
  control: 'text' | 'textarea' | 'select' | 'radio' | 'list';
  connection_related: boolean;
  optional: boolean;
  values?: unknown[];
  hint: Lang;
  label: Lang;
}

export interface About {
  trial: boolean;
  installed: boolean;
  author: { name: string; email: string; company: string; website: string };
  helpUrl: Lang;
  description: Lang;
}

export interface ConnectorMeta {
  about: About;
  libs: string[];
  node: { category: 'source' | 'sink'; icon: string; label: Lang };
}

export interface SourceMeta extends ConnectorMeta {
  /** properties per config key (only `default` for the built-ins) */
  properties: { default: FieldMeta[] };
  dataSource?: { default: string; hint: Lang; label: Lang };
}

export interface SinkMeta extends ConnectorMeta {
  properties: FieldMeta[];
}

export const same = (text: string): Lang => ({ en_US: text, zh_CN: text });

export function about(description: Lang, doc: string): About {
  return {
    trial: false,
    installed: true,
    author: { name: 'Eddy', email: '', company: '', website: '' },
    helpUrl: same(`https://ekuiper.org/docs/en/v1.14/guide/${doc}.html`),
    description,
  };
}

export interface FieldOpts {
  optional?: boolean;
  values?: unknown[];
  connection?: boolean;
  control?: FieldMeta['control'];
}

/** One property descriptor; the control follows from the type unless given. */
export function f(
  name: string,
  type: FieldMeta['type'],
  dflt: unknown,
  label: string,
  hint: string,
  o: FieldOpts = {},
): FieldMeta {
  const control =
    o.control ??
    (o.values
      ? 'select'
      : type === 'bool'
        ? 'radio'
        : type.startsWith('list')
          ? 'list'
          : type === 'object'
            ? 'textarea'
            : 'text');
  const m: FieldMeta = {
    name,
    default: dflt,
    type,
    control,
    connection_related: o.connection ?? false,
    optional: o.optional ?? true,
    hint: same(hint),
    label: same(label),
  };
  if (o.values) m.values = o.values;
  return m;
}

export const TLS: FieldMeta[] = [
  f('insecureSkipVerify', 'bool', false, 'Skip certificate verification', 'Do not verify the server certificate.', {
    connection: true,
  }),
  f('certificationPath', 'string', '', 'Certificate path', 'Client certificate file (PEM).', { connection: true }),
  f('privateKeyPath', 'string', '', 'Private key path', 'Client private key file (PEM).', { connection: true }),
  f('rootCaPath', 'string', '', 'Root CA path', 'Root CA file used to verify the server (PEM).', { connection: true }),
  f('tlsMinVersion', 'string', 'tls1.2', 'Minimum TLS version', 'Lowest TLS version accepted.', {
    values: ['tls1.0', 'tls1.1', 'tls1.2', 'tls1.3'],
    connection: true,
  }),
];

// zstd is left out: Node 20 has no zstd codec (compression.ts)
export const COMPRESSIONS = ['zlib', 'gzip', 'flate'];
const HTTP_METHODS = ['get', 'post', 'put', 'delete'];
const BODY_TYPES = ['none', 'text', 'json', 'html', 'xml', 'javascript', 'form'];

const MQTT_CONN: FieldMeta[] = [
  f(
    'server',
    'string',
    'tcp://127.0.0.1:1883',
    'Broker address',
    'Broker URL, e.g. tcp://127.0.0.1:1883 or ssl://host:8883.',
    { optional: false, connection: true },
  ),
  f('username', 'string', '', 'User name', 'User name for the broker.', { connection: true }),
  f('password', 'string', '', 'Password', 'Password for the broker.', { connection: true }),
  f('clientid', 'string', '', 'Client id', 'Client id; a random one when empty.', { connection: true }),
  f('protocolVersion', 'string', '3.1.1', 'Protocol version', 'MQTT protocol version.', {
    values: ['3.1', '3.1.1'],
    connection: true,
  }),
  ...TLS,
];

export type SourceEntry = SourceMeta & { stream: boolean; lookup: boolean };

/** What a source serves (a stream unless said otherwise) and its DATASOURCE field. */
export interface SourceKind {
  stream?: boolean;
  lookup?: boolean;
  dataSource?: [dflt: string, label: string, hint: string];
}

/** about, libs and node: the part every connector's metadata has. */
function card(category: 'source' | 'sink', description: Lang, doc: string, label: string): ConnectorMeta {
  return { about: about(description, doc), libs: [], node: { category, icon: 'iconPath', label: same(label) } };
}

export function source(
  description: Lang,
  doc: string,
  label: string,
  props: FieldMeta[],
  kind: SourceKind = {},
): SourceEntry {
  const m: SourceEntry = {
    stream: kind.stream ?? true,
    lookup: kind.lookup ?? false,
    ...card('source', description, doc, label),
    properties: { default: props },
  };
  if (kind.dataSource) {
    const [dflt, dsLabel, hint] = kind.dataSource;
    m.dataSource = { default: dflt, hint: same(hint), label: same(dsLabel) };
  }
  return m;
}

/** The connection fields of the redis connectors: the address key differs, and the lookup takes db from DATASOURCE. */
function redisConn(addrKey: 'addr' | 'address', withDb: boolean): FieldMeta[] {
  const fields = [
    f(addrKey, 'string', '127.0.0.1:6379', 'Address', 'host:port of the server.', {
      optional: false,
      connection: true,
    }),
    f('username', 'string', '', 'User name', 'User name.', { connection: true }),
    f('password', 'string', '', 'Password', 'Password.', { connection: true }),
  ];
  if (withDb) fields.push(f('db', 'int', 0, 'Database', 'Database number 0-15.', { connection: true }));
  return fields;
}

const SOURCES: Record<string, SourceEntry> = {
  mqtt: source(
    { en_US: 'Subscribes to topics of an MQTT broker.', zh_CN: '订阅 MQTT 服务器的主题。' },
    'sources/builtin/mqtt',
    'MQTT',
    [
      ...MQTT_CONN,
      f('qos', 'int', 1, 'QoS', 'Subscription quality of service.', { values: [0, 1, 2] }),
      f('decompression', 'string', '', 'Decompression', 'Decompress payloads with this algorithm.', {
        values: COMPRESSIONS,
      }),
      f('connectionSelector', 'string', '', 'Connection', 'Shared connection mqtt.<key> from the connections config.'),
    ],
    { dataSource: ['topic/temperature', 'Topic', 'Topic filter; + and # are allowed.'] },
  ),
  memory: source(
    { en_US: 'Reads rows published by memory sinks of other rules.', zh_CN: '读取其他规则内存动作发布的数据。' },
    'sources/builtin/memory',
    'Memory',
    [f('bufferLength', 'int', 1024, 'Buffer length', 'Messages kept while the rule is busy.')],
    { lookup: true, dataSource: ['topic1', 'Topic', 'Memory topic; + and # are allowed.'] },
  ),
  httppull: source(
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
    { lookup: true, dataSource: ['/api/data', 'Path', 'Path appended to the url.'] },
  ),
  httppush: source(
    { en_US: 'Receives data POSTed to the HTTP data server.', zh_CN: '接收推送到 HTTP 数据服务的数据。' },
    'sources/builtin/http_push',
    'HTTP push',
    [f('method', 'string', 'POST', 'Method', 'HTTP method accepted.', { values: ['POST', 'PUT'] })],
    { dataSource: ['/api/data', 'Endpoint', 'Endpoint path on the data server.'] },
  ),
  file: source(
    { en_US: 'Reads rows from files (json, csv, lines).', zh_CN: '从文件读取数据。' },
    'sources/builtin/file',
    'File',
    [
      f('fileType', 'string', 'json', 'File type', 'Content type of the files.', { values: ['json', 'csv', 'lines'] }),
      f('path', 'string', 'data', 'Path', 'Folder holding the files.'),
      f('interval', 'int', 0, 'Interval', 'Re-read period in milliseconds; 0 reads once.'),
      f('sendInterval', 'int', 0, 'Send interval', 'Pause between rows in milliseconds.'),
      f('parallel', 'bool', false, 'Parallel', 'Read the files of a folder in parallel.'),
      f('actionAfterRead', 'int', 0, 'After read', '0 keep, 1 delete, 2 move the file.', { values: [0, 1, 2] }),
      f('moveTo', 'string', '', 'Move to', 'Folder receiving read files when actionAfterRead is 2.'),
      f('hasHeader', 'bool', false, 'Header', 'The first csv line holds the column names.'),
      f('columns', 'list_string', [], 'Columns', 'Column names of a csv without header.'),
      f('ignoreStartLines', 'int', 0, 'Skip first lines', 'Lines skipped at the start.'),
      f('ignoreEndLines', 'int', 0, 'Skip last lines', 'Lines skipped at the end.'),
      f('delimiter', 'string', ',', 'Delimiter', 'Column delimiter of csv files.'),
      f('decompression', 'string', '', 'Decompression', 'Decompress the files.', { values: ['gzip'] }),
    ],
    { dataSource: ['data.json', 'File', 'File or folder relative to path.'] },
  ),
  redis: source(
    { en_US: 'Looks rows up in Redis by key.', zh_CN: '按键查询 Redis 数据。' },
    'sources/builtin/redis',
    'Redis',
    [
      ...redisConn('addr', false),
      f('dataType', 'string', 'string', 'Data type', 'string: a JSON object per key; list: a list of JSON objects.', {
        values: ['string', 'list'],
      }),
    ],
    { stream: false, lookup: true, dataSource: ['0', 'Database', 'Database number 0-15.'] },
  ),
  redisSub: source(
    { en_US: 'Subscribes to Redis channels.', zh_CN: '订阅 Redis 频道。' },
    'sources/builtin/redisSub',
    'Redis subscription',
    [
      ...redisConn('address', true),
      f('channels', 'list_string', [], 'Channels', 'Channel patterns to subscribe to.', { optional: false }),
      f('decompression', 'string', '', 'Decompression', 'Decompress payloads.', { values: COMPRESSIONS }),
    ],
  ),
  websocket: source(
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
    { dataSource: ['/api/data', 'Path', 'Path of the websocket.'] },
  ),
  simulator: source(
    { en_US: 'Replays a fixed list of rows at an interval, for trials.', zh_CN: '按间隔重放固定数据，用于试运行。' },
    'sources/builtin/simulator',
    'Simulator',
    [
      f('data', 'list_object', [{ temperature: 22.5, humidity: 50 }], 'Data', 'Rows replayed in order.', {
        optional: false,
      }),
      f('interval', 'int', 1000, 'Interval', 'Milliseconds between two rows.'),
      f('loop', 'bool', true, 'Loop', 'Start over after the last row.'),
    ],
  ),
  sql: source(
    { en_US: 'Queries a SQL database at an interval or by key.', zh_CN: '定时或按键查询 SQL 数据库。' },
    'sources/plugin/sql',
    'SQL',
    [
      f('url', 'string', '', 'URL', 'Database URL, e.g. mysql://user:pw@host:3306/db.', {
        optional: false,
        connection: true,
      }),
      f('interval', 'int', 10000, 'Interval', 'Query period in milliseconds.'),
      f(
        'internalSqlQueryCfg',
        'object',
        {},
        'Query',
        'Generated query: table, indexField, indexValue, limit, indexFieldType, dateTimeFormat.',
      ),
      f('templateSqlQueryCfg', 'object', {}, 'Template query', 'Query template with an index field.'),
    ],
    { lookup: true, dataSource: ['table1', 'Table', 'Table name.'] },
  ),
};

const COMMON_SINK: FieldMeta[] = [
  f('sendSingle', 'bool', false, 'Send row by row', 'Send each row on its own instead of the whole result.'),
  f('dataTemplate', 'string', '', 'Data template', 'Go text/template applied to the data.', { control: 'textarea' }),
  f('format', 'string', 'json', 'Format', 'Encoding of the payload.', { values: ['json', 'protobuf', 'delimited'] }),
  f('schemaId', 'string', '', 'Schema', 'schema.Message for the protobuf format.'),
  f('delimiter', 'string', ',', 'Delimiter', 'Column delimiter of the delimited format.'),
  f('fields', 'list_string', [], 'Fields', 'Keep only these fields.'),
  f('dataField', 'string', '', 'Data field', 'Send the content of this field.'),
  f('omitIfEmpty', 'bool', false, 'Omit empty', 'Do not send empty results.'),
  f('bufferLength', 'int', 1024, 'Buffer length', 'Results waiting to be sent.'),
  f('enableCache', 'bool', false, 'Cache', 'Keep failed results and resend them.'),
];

export function sink(description: Lang, doc: string, label: string, props: FieldMeta[]): SinkMeta {
  return { ...card('sink', description, doc, label), properties: [...props, ...COMMON_SINK] };
}

const SINKS: Record<string, SinkMeta> = {
  log: sink({ en_US: 'Writes results to the log.', zh_CN: '将结果写入日志。' }, 'sinks/builtin/log', 'Log', []),
  nop: sink({ en_US: 'Discards results.', zh_CN: '丢弃结果。' }, 'sinks/builtin/nop', 'Nop', [
    f('log', 'bool', false, 'Log', 'Also log each result.'),
  ]),
  mqtt: sink(
    { en_US: 'Publishes results to an MQTT broker.', zh_CN: '将结果发布到 MQTT 服务器。' },
    'sinks/builtin/mqtt',
    'MQTT',
    [
      ...MQTT_CONN,
      f('topic', 'string', '', 'Topic', 'Topic to publish to; may use templates.', { optional: false }),
      f('qos', 'int', 0, 'QoS', 'Publish quality of service.', { values: [0, 1, 2] }),
      f('retained', 'bool', false, 'Retained', 'Publish retained messages.'),
      f('compression', 'string', '', 'Compression', 'Compress payloads.', { values: COMPRESSIONS }),
      f('connectionSelector', 'string', '', 'Connection', 'Shared connection mqtt.<key> from the connections config.'),
    ],
  ),
  rest: sink(
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
  memory: sink(
    { en_US: 'Publishes rows to a memory topic read by other rules.', zh_CN: '将数据发布到内存主题。' },
    'sinks/builtin/memory',
    'Memory',
    [
      f('topic', 'string', '', 'Topic', 'Memory topic; may use templates.', { optional: false }),
      f('rowkindField', 'string', '', 'Row kind field', 'Field holding insert, update, upsert or delete.'),
      f('keyField', 'string', '', 'Key field', 'Key of the rows, required with a row kind field.'),
    ],
  ),
  redis: sink(
    { en_US: 'Writes rows to Redis keys or lists.', zh_CN: '将数据写入 Redis。' },
    'sinks/builtin/redis',
    'Redis',
    [
      ...redisConn('addr', true),
      f('key', 'string', '', 'Key', 'Key written.'),
      f('field', 'string', '', 'Key field', 'Take the key from this field of the row.'),
      f('keyType', 'string', 'single', 'Key type', 'single: the row under one key; multiple: one key per field.', {
        values: ['single', 'multiple'],
      }),
      f('dataType', 'string', 'string', 'Data type', 'SET a string or LPUSH onto a list.', {
        values: ['string', 'list'],
      }),
      f('expiration', 'int', -1, 'Expiration', 'Seconds before a string key expires; -1 never.'),
      f('rowkindField', 'string', '', 'Row kind field', 'Field holding the row kind; delete removes.'),
    ],
  ),
  redisPub: sink(
    { en_US: 'Publishes results to a Redis channel.', zh_CN: '将结果发布到 Redis 频道。' },
    'sinks/builtin/redisPub',
    'Redis publish',
    [
      ...redisConn('address', true),
      f('channel', 'string', '', 'Channel', 'Channel to publish to.', { optional: false }),
      f('compression', 'string', '', 'Compression', 'Compress payloads.', { values: COMPRESSIONS }),
    ],
  ),
  file: sink({ en_US: 'Writes results to files.', zh_CN: '将结果写入文件。' }, 'sinks/builtin/file', 'File', [
    f('path', 'string', 'cache', 'Path', 'File path; may use templates.', { optional: false }),
    f('fileType', 'string', 'lines', 'File type', 'lines, json or csv.', { values: ['lines', 'json', 'csv'] }),
    f('hasHeader', 'bool', false, 'Header', 'Write a header line to csv files.'),
    f('rollingInterval', 'int', 0, 'Rolling interval', 'Close a file after this many milliseconds.'),
    f('checkInterval', 'int', 300000, 'Check interval', 'How often the rolling interval is checked.'),
    f('rollingCount', 'int', 1000000, 'Rolling count', 'Close a file after this many results.'),
    f('rollingNamePattern', 'string', '', 'Name pattern', 'Where the timestamp goes in rolled file names.', {
      values: ['prefix', 'suffix', 'none'],
    }),
    f('compression', 'string', '', 'Compression', 'Compress the files.', { values: ['gzip'] }),
  ]),
  websocket: sink(
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
  sql: sink(
    { en_US: 'Inserts results into a SQL database table.', zh_CN: '将结果写入 SQL 数据库。' },
    'sinks/plugin/sql',
    'SQL',
    [
      f('url', 'string', '', 'URL', 'Database URL.', { optional: false, connection: true }),
      f('table', 'string', '', 'Table', 'Table written; may use templates.', { optional: false }),
      f('rowkindField', 'string', '', 'Row kind field', 'Field holding insert, update or delete.'),
      f('keyField', 'string', '', 'Key field', 'Key column for update and delete.'),
    ],
  ),
};

const CONNECTIONS: Record<string, SourceMeta> = {
  mqtt: {
    ...card(
      'source',
      { en_US: 'A broker connection shared by MQTT sources and sinks.', zh_CN: '共享的 MQTT 连接。' },
      'sources/builtin/mqtt',
      'MQTT',
    ),
    properties: { default: MQTT_CONN },
  },
};

/** Metadata of a connector defined in its own module (registered with the connector). */
export function addSourceMeta(name: string, meta: SourceEntry): void {
  SOURCES[name] = meta;
}

export function addSinkMeta(name: string, meta: SinkMeta): void {
  SINKS[name] = meta;
}

export interface PluginInfo {
  name: string;
  about: About;
}

function list(entries: Array<[string, ConnectorMeta]>): PluginInfo[] {
  return entries
    .map(([name, m]) => ({ name, about: m.about }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** `GET /metadata/sources?kind=`: sources Eddy has metadata for and has installed; `scan`/`lookup` narrow it. */
export function sourcePlugins(installed: (type: string, lookup: boolean) => boolean, kind: string): PluginInfo[] {
  return list(
    Object.entries(SOURCES).filter(([name, m]) => {
      const stream = m.stream && installed(name, false);
      const lookup = m.lookup && installed(name, true);
      if (kind === 'lookup') return lookup;
      if (kind === 'scan') return stream;
      return stream || lookup;
    }),
  );
}

export function sourceMeta(name: string): SourceMeta | undefined {
  const m = SOURCES[name];
  if (!m) return undefined;
  const out: SourceMeta = { about: m.about, libs: m.libs, properties: m.properties, node: m.node };
  if (m.dataSource) out.dataSource = m.dataSource;
  return out;
}

export function sinkPlugins(installed: (type: string) => boolean): PluginInfo[] {
  return list(Object.entries(SINKS).filter(([name]) => installed(name)));
}

export function sinkMeta(name: string): SinkMeta | undefined {
  return SINKS[name];
}

export function connectionPlugins(): PluginInfo[] {
  return list(Object.entries(CONNECTIONS));
}

export function connectionMeta(name: string): SourceMeta | undefined {
  return CONNECTIONS[name];
}
