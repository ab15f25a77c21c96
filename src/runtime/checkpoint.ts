/**
 * Checkpoints of qos ≥ 1 rules (docs/runtime.md §1.9): the state of the stateful operators (window contents and
 * progress, watermarks, scan-table snapshots) saved to the metadata store, namespace `checkpoint:<ruleId>`, and
 * restored when the rule opens again. Values keep their runtime types (int, datetime, bytes) through a tagged
 * JSON form.
 */
import { DateTime, type Value, type ValueObject } from '../values/value.js';
import { JoinTuple, Tuple, type Row } from '../contracts/index.js';
import type { KVStore } from '../store/kv.js';

export const checkpointNamespace = (ruleId: string): string => `checkpoint:${ruleId}`;
const LATEST = 'latest';

/** Drops every checkpoint of a rule (rule deletion). */
export async function dropCheckpoints(store: KVStore, ruleId: string): Promise<void> {
  await store.clear(checkpointNamespace(ruleId));
}

/**
 * A node with state saved at checkpoints: under {@link checkpointKey} (the node's name), in the JSON form the store
 * keeps (rows and values through the codec below). The topologies save and restore every such node alike.
 */
export interface Checkpointed {
  readonly checkpointKey: string;
  /** whether there is state to save now (a source whose connector cannot rewind has none) */
  hasState(): boolean;
  /** the state in its stored form */
  snapshot(): Json;
  /** replaces the state with a {@link snapshot} of the same node (taken by this version or an earlier one) */
  restore(state: Json): void;
}

export function isCheckpointed<T extends object>(node: T): node is T & Checkpointed {
  return 'checkpointKey' in node;
}

export interface CheckpointDoc {
  /** checkpoint id = trigger time, Unix ms */
  id: number;
  /** node name → encoded state */
  states: Record<string, Json>;
}

export async function saveCheckpoint(store: KVStore, ruleId: string, doc: CheckpointDoc): Promise<void> {
  await store.set(checkpointNamespace(ruleId), LATEST, JSON.stringify(doc));
}

export async function loadCheckpoint(store: KVStore, ruleId: string): Promise<CheckpointDoc | undefined> {
  const text = await store.get(checkpointNamespace(ruleId), LATEST);
  if (!text) return undefined;
  try {
    return JSON.parse(text) as CheckpointDoc;
  } catch {
    return undefined;
  }
}

// ------------------------------------------------------------------------------------------------ value codec

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const TAGS = new Set(['$i', '$t', '$b', '$f', '$u']);

export function encodeValue(v: Value): Json {
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return v;
  if (v === undefined) return { $u: 1 };
  if (typeof v === 'number') return Number.isFinite(v) ? v : { $f: String(v) };
  if (typeof v === 'bigint') return { $i: v.toString() };
  if (v instanceof DateTime) return { $t: [v.ms, v.zone, v.nanos] };
  if (v instanceof Uint8Array) return { $b: Buffer.from(v).toString('base64') };
  if (Array.isArray(v)) return v.map(encodeValue);
  const out: { [k: string]: Json } = {};
  for (const [k, x] of Object.entries(v)) out[k.startsWith('$') ? `$${k}` : k] = encodeValue(x);
  return out;
}

export function decodeValue(j: unknown): Value {
  if (j === null || typeof j === 'boolean' || typeof j === 'string' || typeof j === 'number') return j;
  if (Array.isArray(j)) return j.map(decodeValue);
  if (typeof j !== 'object') return null;
  const o = j as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length === 1 && TAGS.has(keys[0])) {
    switch (keys[0]) {
      case '$i':
        return BigInt(o.$i as string);
      case '$t': {
        const [ms, zone, nanos] = o.$t as [number, string, number];
        return new DateTime(ms, zone, nanos);
      }
      case '$b':
        return new Uint8Array(Buffer.from(o.$b as string, 'base64'));
      case '$f':
        return Number(o.$f);
      case '$u':
        return undefined;
    }
  }
  const out: ValueObject = {};
  for (const k of keys) out[k.startsWith('$$') ? k.slice(1) : k] = decodeValue(o[k]);
  return out;
}

export function encodeRow(r: Row): Json {
  if (r.kind === 'join') return { j: r.tuples.map(encodeRow), ts: r.timestamp };
  const t: { [k: string]: Json } = {
    e: r.emitter,
    m: encodeValue(r.message),
    meta: encodeValue(r.meta),
    ts: r.timestamp,
  };
  if (r.analytic) t.a = r.analytic.map(encodeValue);
  return t;
}

export function decodeRow(j: unknown): Row {
  const o = j as Record<string, unknown>;
  if (Array.isArray(o.j))
    return new JoinTuple(
      o.j.map((x) => decodeRow(x) as Tuple),
      o.ts as number,
    );
  const t = new Tuple(
    o.e as string,
    decodeValue(o.m) as ValueObject,
    decodeValue(o.meta) as ValueObject,
    o.ts as number,
  );
  if (Array.isArray(o.a)) t.analytic = o.a.map(decodeValue);
  return t;
}
