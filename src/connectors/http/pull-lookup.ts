/**
 * The httppull lookup table (docs/runtime.md §2.5, §2.6): every lookup issues the configured request once and keeps
 * the returned rows whose join-key columns equal the probe values (the server is not asked to filter).
 */
import type { ConnectorContext, LookupConnector, Props } from '../../contracts/index.js';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import { parseJsonExact } from '../formats/jsonparse.js';
import { HttpPuller } from './pull-source.js';

/** Equality of a probe value and a decoded column: numbers compare by value whatever their int/float kind. */
export function sameValue(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (a === null || a === undefined || b === null || b === undefined) return false;
  const na = typeof a === 'bigint' || typeof a === 'number';
  const nb = typeof b === 'bigint' || typeof b === 'number';
  if (na && nb) return Number(a) === Number(b);
  return false;
}

export class HttpPullLookup implements LookupConnector {
  private puller!: HttpPuller;

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    this.puller = new HttpPuller(datasource, { ...props, incremental: false });
  }

  async connect(_ctx: ConnectorContext): Promise<void> {
    await this.puller.start();
  }

  async lookup(
    ctx: ConnectorContext,
    _fields: readonly string[],
    keys: readonly string[],
    values: readonly Value[],
  ): Promise<ValueObject[]> {
    const body = await this.puller.pull(ctx.logger);
    const text = body === null ? '' : body.toString('utf8');
    if (text.trim() === '') return [];
    const parsed = parseJsonExact(text);
    const rows = (Array.isArray(parsed) ? parsed : [parsed]).filter((r): r is ValueObject => isObject(r as Value));
    return rows.filter((r) => keys.every((k, i) => sameValue(r[k], values[i])));
  }

  async close(_ctx: ConnectorContext): Promise<void> {}
}
