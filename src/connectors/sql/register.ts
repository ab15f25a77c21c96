/**
 * Registration of the sql extension connectors: the source, lookup table and sink, and their connection checks
 * (docs/runtime.md §4, §11 #11: the source and lookup checks need only `url`; the sink check also needs `table`).
 * Check failures are plain errors, reported with code 1000.
 */
import type { Props } from '../../contracts/index.js';
import type { Registry } from '../registry.js';
import { propString } from '../props.js';
import { pingSql } from './db.js';
import { SqlLookup } from './lookup.js';
import { sqlSinkSettings, SqlSink } from './sink.js';
import { SqlSource } from './source.js';

const urlOf = (props: Props): string => propString(props, 'url', '');

export function registerSql(registry: Registry): void {
  registry.registerSource('sql', () => new SqlSource());
  registry.registerLookup('sql', () => new SqlLookup());
  registry.registerSink('sql', () => new SqlSink());
  registry.registerConnectionCheck('source', 'sql', (props) => pingSql(urlOf(props)));
  registry.registerConnectionCheck('lookup', 'sql', (props) => pingSql(urlOf(props)));
  registry.registerConnectionCheck('sink', 'sql', async (props) => {
    try {
      sqlSinkSettings(props);
    } catch (e) {
      throw new Error((e as Error).message);
    }
    await pingSql(urlOf(props));
  });
}
