/**
 * Operators that only graph rules have (docs/runtime.md §1.4) and the adaptations of SQL operators to the graph's
 * data flow, where every node hands rows or collections on instead of the final projected objects:
 * - `function`/`aggfunc`: a call's value stored as a column of each row (or of each group's row);
 * - `pick`: the SQL projection, its objects travelling on as rows;
 * - `orderby`: the SQL ORDER BY, a plain collection staying a plain collection;
 * - `switch`: one output per case;
 * - `script`: a JavaScript `exec` function run on each row or collection, with a time limit;
 * - the receiver that turns whatever reaches a sink into the rows it sends.
 */
import vm from 'node:vm';
import { JoinTuple, Tuple, type ErrorRecord, type Row, type SinkNode } from '../contracts/index.js';
import { kinds, Output, RowBatch, UnitBatch, unhandled, type Item, type ItemKind, type ItemOf } from './items.js';
import { QueueNode, type Receiver } from './node.js';
import { OrderNode, ProjectNode, type OpEnv, type ProjectKinds } from './operators.js';
import { WatermarkNode } from './watermark.js';
import { EMPTY_ROW, EvalUnit, type EvalContext, type RowFn } from '../plan/plan.js';
import { rowObject } from '../plan/compile.js';
import { isObject, type Value, type ValueObject } from '../values/value.js';
import { typedText } from '../values/text.js';

/** `row` with `column` set to `value`: a new row, the input (possibly shared with other rules) is left as is. */
export function withColumn(row: Row, column: string, value: Value): Row {
  if (row.kind === 'tuple') {
    const t = new Tuple(row.emitter, { ...row.message, [column]: value }, row.meta, row.timestamp);
    t.analytic = row.analytic;
    return t;
  }
  const ts = row.tuples;
  // computed columns live in a leading tuple with no emitter, read before the joined sides
  const head = ts.length > 0 && ts[0].emitter === '' ? ts[0] : null;
  const meta = head ? head.meta : ts.length ? ts[0].meta : {};
  const computed = new Tuple('', { ...(head ? head.message : {}), [column]: value }, meta, row.timestamp);
  const j = new JoinTuple([computed, ...(head ? ts.slice(1) : ts)], row.timestamp);
  j.analytic = row.analytic;
  return j;
}

function bindBatch(ctx: EvalContext, b: RowBatch | UnitBatch): void {
  if (b.windowed) ctx.setWindow(b.windowStart, b.windowEnd);
  else ctx.setWindow(undefined, undefined);
}

type RowKinds = 'tuple' | 'join' | 'rows' | 'units';
const ROWS = kinds<RowKinds>('tuple', 'join', 'rows', 'units');

/** `function` and `aggfunc` nodes. */
export class FunctionNode extends QueueNode<RowKinds> {
  protected readonly handles = ROWS;
  private readonly ctx: EvalContext;
  constructor(
    name: string,
    private readonly env: OpEnv,
    private readonly column: string,
    private readonly fn: RowFn,
    /** aggregate call: evaluated once per group (a plain collection is one group) */
    private readonly agg: boolean,
  ) {
    super(name, env.bufferLength);
    this.ctx = env.ctx;
  }

  protected process(item: ItemOf<RowKinds>): void {
    const ctx = this.ctx;
    try {
      switch (item.kind) {
        case 'tuple':
        case 'join':
          ctx.setWindow(undefined, undefined);
          ctx.bindRow();
          this.emit(withColumn(item, this.column, this.fn(item, ctx)));
          return;
        case 'rows':
          bindBatch(ctx, item);
          if (this.agg) {
            const u = new EvalUnit(item.rows.length ? item.rows[0] : EMPTY_ROW, item.rows);
            this.emit(new UnitBatch([this.unit(u)], item.windowStart, item.windowEnd, item.windowed));
          } else {
            const rows = item.rows.map((r) => {
              ctx.bindRow();
              return withColumn(r, this.column, this.fn(r, ctx));
            });
            this.emit(new RowBatch(rows, item.windowStart, item.windowEnd, item.windowed));
          }
          return;
        case 'units':
          bindBatch(ctx, item);
          this.emit(
            new UnitBatch(
              item.units.map((u) => this.unit(u)),
              item.windowStart,
              item.windowEnd,
              item.windowed,
            ),
          );
          return;
        default:
          unhandled(item);
      }
    } catch (err) {
      this.emitError(err, this.env.sendError);
    }
  }

  private unit(u: EvalUnit): EvalUnit {
    this.ctx.bindUnit(u);
    const out = new EvalUnit(withColumn(u.row, this.column, this.fn(u.row, this.ctx)), u.group);
    out.rowNumbers = u.rowNumbers;
    return out;
  }
}

function tupleOf(obj: ValueObject, like: Item | null, ts: number): Tuple {
  switch (like?.kind) {
    case 'tuple':
      return new Tuple(like.emitter, obj, like.meta, like.timestamp);
    case 'join':
      return new Tuple(like.tuples[0]?.emitter ?? '', obj, like.tuples[0]?.meta ?? {}, like.timestamp);
    default:
      return new Tuple('', obj, {}, ts);
  }
}

/** `pick`: the SQL projection; the projected objects travel on as rows of the same kind as the input. */
export class PickNode extends ProjectNode {
  private current: Item | null = null;
  protected override process(item: ItemOf<ProjectKinds>): void {
    if (item.kind === 'watermark') {
      // event time keeps flowing through a projection placed before a window
      super.emit(item);
      return;
    }
    this.current = item;
    super.process(item);
    this.current = null;
  }
  protected override emit(item: Item): void {
    if (item.kind !== 'output') {
      super.emit(item);
      return;
    }
    const cur = this.current;
    if (item.single) {
      super.emit(tupleOf(item.rows[0], cur, item.timestamp));
      return;
    }
    const b = cur !== null && (cur.kind === 'rows' || cur.kind === 'units') ? cur : null;
    const rows = item.rows.map((o) => tupleOf(o, null, item.timestamp));
    super.emit(new RowBatch(rows, b ? b.windowStart : 0, b ? b.windowEnd : item.timestamp, b ? b.windowed : false));
  }
}

/** `orderby`: the SQL ORDER BY; a plain collection comes out as a plain collection, groups stay groups. */
export class GraphOrderNode extends OrderNode {
  private plain = false;
  protected override process(item: ItemOf<'rows' | 'units' | 'watermark'>): void {
    this.plain = item.kind === 'rows';
    super.process(item);
  }
  protected override emit(item: Item): void {
    if (this.plain && item.kind === 'units') {
      super.emit(
        new RowBatch(
          item.units.map((u) => u.row),
          item.windowStart,
          item.windowEnd,
          item.windowed,
        ),
      );
      return;
    }
    super.emit(item);
  }
}

/**
 * `watermark`: the SQL event-time watermark operator; with `sendWatermark` false the watermarks stay inside it (the
 * events are still released in time order), so an event-time window behind it never closes, as in eKuiper.
 */
export class GraphWatermarkNode extends WatermarkNode {
  constructor(
    name: string,
    bufferLength: number,
    emitters: readonly string[],
    lateTolerance: number,
    private readonly sendWatermark: boolean,
  ) {
    super(name, bufferLength, emitters, lateTolerance);
  }
  protected override emit(item: Item): void {
    if (item.kind === 'watermark' && !this.sendWatermark) return;
    super.emit(item);
  }
}

/**
 * `switch`: routes each row or collection to the outputs of every case it matches (or of the first one). A
 * collection is tested as one group (aggregates see all its rows). A failing or non-bool case is counted as an
 * exception and the next case is tried; errors reach no output, as in eKuiper.
 */
export class SwitchNode extends QueueNode<ItemKind> {
  /** every kind: the node has no single output to pass anything on to */
  protected readonly handles = kinds<ItemKind>(
    'tuple',
    'join',
    'rows',
    'units',
    'table',
    'raw',
    'output',
    'error',
    'watermark',
  );
  /** outputs per case */
  readonly cases: Receiver[][];
  constructor(
    name: string,
    private readonly env: OpEnv,
    private readonly conditions: readonly RowFn[],
    /** each case's text, for error messages */
    private readonly texts: readonly string[],
    private readonly stopAtFirstMatch: boolean,
  ) {
    super(name, env.bufferLength);
    this.cases = conditions.map(() => []);
  }

  protected process(item: Item): void {
    const ctx = this.env.ctx;
    let row: Row;
    switch (item.kind) {
      case 'watermark':
        for (const outs of this.cases) this.send(outs, item);
        return;
      case 'error':
        this.metrics.error(item.message);
        return;
      case 'tuple':
      case 'join':
        ctx.setWindow(undefined, undefined);
        ctx.bindRow();
        row = item;
        break;
      case 'rows':
      case 'units': {
        bindBatch(ctx, item);
        const rows = item.kind === 'rows' ? item.rows : item.units.map((u) => u.row);
        const u = new EvalUnit(rows.length ? rows[0] : EMPTY_ROW, rows);
        ctx.bindUnit(u);
        row = u.row;
        break;
      }
      case 'table':
      case 'raw':
      case 'output':
        this.metrics.error(`run switch node error: invalid input type`);
        return;
      default:
        unhandled(item);
    }
    let sent = false;
    for (let i = 0; i < this.conditions.length; i++) {
      let v: Value;
      try {
        v = this.conditions[i](row, ctx);
      } catch (err) {
        this.metrics.error(err);
        continue;
      }
      if (v === true) {
        this.send(this.cases[i], item);
        sent = true;
        if (this.stopAtFirstMatch) break;
      } else if (v !== false && v !== null && v !== undefined) {
        // the text names the graph key (the node is `op_<key>`)
        this.metrics.error(
          `run switch node ${this.name.slice(3)}, case ${this.texts[i]} error: invalid condition that returns non-bool value ${typedText(v)}`,
        );
      }
    }
    if (sent) this.metrics.recordsOut++;
  }

  private send(outs: readonly Receiver[], item: Item): void {
    for (const out of outs)
      if (!out.accept(item)) this.metrics.error(`buffer full, drop message from ${this.name} to ${out.name}`);
  }
}

// ---------------------------------------------------------------------------------------------- script

/** Per-call time limit of a script node's `exec`. */
const SCRIPT_TIMEOUT_MS = 1000;

/** Engine values → plain JS for the script (ints as numbers, datetimes and bytes as their JSON forms). */
function toScript(v: Value): unknown {
  if (typeof v === 'bigint') return Number(v);
  if (Array.isArray(v)) return v.map(toScript);
  if (isObject(v)) {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(v)) o[k] = toScript(v[k]);
    return o;
  }
  if (v instanceof Uint8Array) return Array.from(v);
  if (v !== null && typeof v === 'object') return String(v);
  return v;
}

/** A script's result → engine values: integral numbers are ints, as a JavaScript engine exports them. */
function fromScript(v: unknown): Value {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (Array.isArray(v)) return v.map(fromScript);
  if (v !== null && typeof v === 'object') {
    const o: ValueObject = {};
    for (const k of Object.keys(v)) o[k] = fromScript((v as Record<string, unknown>)[k]);
    return o;
  }
  return null;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** `script`: `exec(row, meta)` per row, `exec(rows)` per collection, in an isolated context with a time limit. */
export class ScriptNode extends QueueNode<RowKinds> {
  protected readonly handles = ROWS;
  private readonly context: vm.Context;
  private readonly call = new vm.Script('exec(__input, __meta)');
  constructor(
    name: string,
    private readonly env: OpEnv,
    source: string,
    private readonly isAgg: boolean,
  ) {
    super(name, env.bufferLength);
    this.context = vm.createContext({});
    new vm.Script(source).runInContext(this.context, {
      timeout: SCRIPT_TIMEOUT_MS,
    });
  }

  private exec(input: unknown, meta: unknown): unknown {
    const g = this.context as Record<string, unknown>;
    g.__input = input;
    g.__meta = meta;
    try {
      return this.call.runInContext(this.context, {
        timeout: SCRIPT_TIMEOUT_MS,
      });
    } catch (e) {
      throw new Error(`failed to execute script: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  protected process(item: ItemOf<RowKinds>): void {
    try {
      if (item.kind === 'tuple' || item.kind === 'join') {
        const meta = item.kind === 'tuple' ? item.meta : (item.tuples[0]?.meta ?? {});
        const out = this.exec(toScript(rowObject(item)), toScript(meta));
        if (!isPlainObject(out)) throw new Error(`script exec result is not a map: ${JSON.stringify(out)}`);
        this.emit(tupleOf(fromScript(out) as ValueObject, item, item.timestamp));
      } else {
        const rows = item.kind === 'rows' ? item.rows : item.units.map((u) => u.row);
        const out = this.exec(
          rows.map((r) => toScript(rowObject(r))),
          undefined,
        );
        let objs: unknown[];
        if (this.isAgg) {
          if (!isPlainObject(out)) throw new Error(`script exec result is not a map: ${JSON.stringify(out)}`);
          objs = [out];
        } else {
          if (!Array.isArray(out) || !out.every(isPlainObject))
            throw new Error(`script exec result is not a list of maps: ${JSON.stringify(out)}`);
          objs = out;
        }
        const ts = item.windowEnd;
        this.emit(
          new RowBatch(
            objs.map((o) => new Tuple('', fromScript(o) as ValueObject, {}, ts)),
            item.windowStart,
            item.windowEnd,
            item.windowed,
          ),
        );
      }
    } catch (err) {
      this.emitError(err, this.env.sendError);
    }
  }
}

// ---------------------------------------------------------------------------------------------- sinks

/** What a graph sink receives for anything that reaches it: rows become their objects, collections their rows. */
export function outputOf(item: Item): Output | ErrorRecord | null {
  switch (item.kind) {
    case 'output':
    case 'error':
      return item;
    case 'tuple':
    case 'join':
      return new Output([rowObject(item)], true, item.timestamp);
    case 'rows':
      return new Output(item.rows.map(rowObject), false, item.windowEnd);
    case 'units':
      return new Output(
        item.units.map((u) => rowObject(u.row)),
        false,
        item.windowEnd,
      );
    case 'table':
    case 'raw':
    case 'watermark':
      return null;
    default:
      return unhandled(item);
  }
}

/** The input of a graph sink (or of its batch node): whatever arrives, as the rows to send. */
export class GraphSinkReceiver implements Receiver {
  readonly name: string;
  constructor(private readonly target: SinkNode | Receiver) {
    this.name = 'accept' in target ? target.name : target.metrics.name;
  }
  accept(item: Item): boolean {
    const out = outputOf(item);
    if (out === null) return true;
    const t = this.target;
    if ('accept' in t) return t.accept(out);
    t.push(out.kind === 'output' ? out.rows : out);
    return true;
  }
}
