/**
 * The vocabulary of UI metadata (docs/rest-api.md §16.13): what `GET /metadata/sources`, `/metadata/sinks`,
 * `/metadata/connections` and their `/{name}` forms answer, in the shape of eKuiper's `etc/**.json` metadata files:
 * `about` (author, help link, description), `libs`, `properties` (one descriptor per property: name, default,
 * type, control, optional, values, hint, label) and `node`. Each connector's metadata is part of its declaration
 * (declaration.ts), written with these builders. The texts are Eddy's own; labels and hints are given in English for
 * both languages.
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

/** about, libs and node: the part every connector's metadata has. */
function card(category: 'source' | 'sink', description: Lang, doc: string, label: string): ConnectorMeta {
  return { about: about(description, doc), libs: [], node: { category, icon: 'iconPath', label: same(label) } };
}

/** A source's metadata; `dataSource`: the default, label and hint of its DATASOURCE field. */
export function source(
  description: Lang,
  doc: string,
  label: string,
  props: FieldMeta[],
  dataSource?: [dflt: string, label: string, hint: string],
): SourceMeta {
  const m: SourceMeta = { ...card('source', description, doc, label), properties: { default: props } };
  if (dataSource) {
    const [dflt, dsLabel, hint] = dataSource;
    m.dataSource = { default: dflt, hint: same(hint), label: same(dsLabel) };
  }
  return m;
}

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

/** A sink's metadata: its own properties, then those of the sink pipeline every sink has. */
export function sink(description: Lang, doc: string, label: string, props: FieldMeta[]): SinkMeta {
  return { ...card('sink', description, doc, label), properties: [...props, ...COMMON_SINK] };
}

/** A shared connection's metadata (`/metadata/connections/{type}`). */
export function connection(description: Lang, doc: string, label: string, props: FieldMeta[]): SourceMeta {
  return { ...card('source', description, doc, label), properties: { default: props } };
}

export interface PluginInfo {
  name: string;
  about: About;
}

/** The `[{name, about}]` of a metadata list, sorted by name. */
export function pluginList(entries: Iterable<[string, ConnectorMeta]>): PluginInfo[] {
  return [...entries]
    .map(([name, m]) => ({ name, about: m.about }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A source's metadata in the order of eKuiper's answer. */
export function sourceAnswer(m: SourceMeta): SourceMeta {
  const out: SourceMeta = { about: m.about, libs: m.libs, properties: m.properties, node: m.node };
  if (m.dataSource) out.dataSource = m.dataSource;
  return out;
}
