/**
 * The sql family's declarations (declaration.ts): the source, lookup table and sink, and their connection checks
 * (docs/runtime.md §4, §11 #11: the source and lookup checks need only `url`; the sink check also needs `table`).
 * Check failures are plain errors, reported with code 1000.
 */
import type { Props } from '../../contracts/index.js';
import { LOOKUP_THREADS, type Declaration } from '../declaration.js';
import { f, sink, source } from '../meta.js';
import { propString } from '../props.js';
import { pingSql } from './db.js';
import { SqlLookup } from './lookup.js';
import { sqlSinkSettings, SqlSink } from './sink.js';
import { SqlSource } from './source.js';

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
    create: () => new SqlSource(),
    defaults: 'sources/sql.yaml',
    meta: META,
    check: (props) => pingSql(urlOf(props)),
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'lookup',
    type: 'sql',
    create: () => new SqlLookup(),
    defaults: 'sources/sql.yaml',
    meta: META,
    check: (props) => pingSql(urlOf(props)),
    threads: LOOKUP_THREADS,
  },
  {
    kind: 'sink',
    type: 'sql',
    create: () => new SqlSink(),
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
        sqlSinkSettings(props);
      } catch (e) {
        throw new Error((e as Error).message);
      }
      await pingSql(urlOf(props));
    },
    validate: null,
    threads: { worker: true },
  },
];
