/**
 * The sql family's declarations (declaration.ts): the source, lookup table and sink, and their connection checks
 * (docs/runtime.md §4, §11 #11: the source and lookup checks need only `url`; the sink check also needs `table`).
 * Check failures are plain errors, reported with code 1000.
 */
import { lazyModule } from '../../core/lazy.js';
import type { Props } from '../../contracts/index.js';
import { LOOKUP_THREADS, type Declaration } from '../declaration.js';
import { f, sink, source } from '../meta.js';
import { propString } from '../props.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the sql connectors', async () => {
  const [dbModule, lookupModule, sinkModule, sourceModule] = await Promise.all([
    import('./db.js'),
    import('./lookup.js'),
    import('./sink.js'),
    import('./source.js'),
  ]);
  return { ...dbModule, ...lookupModule, ...sinkModule, ...sourceModule };
});

const urlOf = (props: Props): string => propString(props, 'url', '');

const META = source(
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
  ['table1', 'Table', 'Table name.'],
);

export const sqlDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'sql',
    load: impl.load,
    create: () => new (impl.get().SqlSource)(),
    defaults: 'sources/sql.yaml',
    meta: META,
    check: (props) => impl.get().pingSql(urlOf(props)),
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'lookup',
    type: 'sql',
    load: impl.load,
    create: () => new (impl.get().SqlLookup)(),
    defaults: 'sources/sql.yaml',
    meta: META,
    check: (props) => impl.get().pingSql(urlOf(props)),
    threads: LOOKUP_THREADS,
  },
  {
    kind: 'sink',
    type: 'sql',
    load: impl.load,
    create: () => new (impl.get().SqlSink)(),
    meta: sink(
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
    check: async (props) => {
      try {
        impl.get().sqlSinkSettings(props);
      } catch (e) {
        throw new Error((e as Error).message);
      }
      await impl.get().pingSql(urlOf(props));
    },
    validate: null,
    threads: { worker: true },
  },
];
