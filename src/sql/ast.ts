/**
 * Immutable AST of Eddy's SQL dialect (eKuiper 1.14, see spec docs/sql.md §2–§5).
 *
 * Every node is a readonly interface discriminated by `kind`. The parser keeps the *written shape* of an
 * expression (parentheses, `.` versus `->`, the function name's spelling) because output naming and the
 * "bool condition" checks of the planner depend on it.
 *
 * Stability: nodes and fields are only ever added, never renamed.
 */
import type { StreamField } from './schema.js';
import type { StreamOptions } from './options.js';

/**
 * 1-based position in the SQL text of the token a node comes from: the first token of operands, calls, CASE,
 * wildcards and literals; the operator token for binary, navigate, subscript, IN, BETWEEN and LIKE nodes.
 * Optional so that nodes built by later stages need none.
 */
export interface SourcePos {
  readonly line: number;
  readonly column: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Expressions
// ---------------------------------------------------------------------------------------------------------------

export type Expr =
  | FieldRef
  | Wildcard
  | IntegerLit
  | FloatLit
  | StringLit
  | BooleanLit
  | TimeUnitLit
  | BinaryExpr
  | NavigateExpr
  | IndexExpr
  | SliceExpr
  | InExpr
  | BetweenExpr
  | LikeExpr
  | CaseExpr
  | CallExpr
  | MetaExpr
  | ParenExpr;

/**
 * A column reference `c` or `q.c`. The parser cannot tell whether `q` is a stream name/alias (stream column) or a
 * column (JSON navigation, same as `q->c`): the binder decides with the FROM/JOIN names (docs/sql.md §2.3).
 * `NULL` is an ordinary column reference (docs/sql.md §1.5).
 */
export interface FieldRef {
  readonly kind: 'field';
  /** the qualifier written before the dot, or null */
  readonly stream: string | null;
  readonly name: string;
  readonly pos?: SourcePos;
}

/** `*`, `s.*`, `* EXCEPT(a, b) REPLACE(expr AS k, …)` (docs/sql.md §2.7). `s.*` never has except/replace. */
export interface Wildcard {
  readonly kind: 'wildcard';
  readonly stream: string | null;
  readonly except: readonly string[];
  readonly replace: readonly ReplaceItem[];
  readonly pos?: SourcePos;
}

export interface ReplaceItem {
  readonly expr: Expr;
  /** the `AS` name; written without AS (the reference allows it) it is the derived output name, as for fields */
  readonly name: string;
}

/** Integer literal (int64). Negative literals (`-5`, `- 5`) are folded into the value. */
export interface IntegerLit {
  readonly kind: 'integer';
  readonly value: bigint;
  readonly pos?: SourcePos;
}

/** Float literal: `1.5`, `5.`, `.5`, `-2.5`. */
export interface FloatLit {
  readonly kind: 'float';
  readonly value: number;
  readonly pos?: SourcePos;
}

export interface StringLit {
  readonly kind: 'string';
  /** the value after escape processing */
  readonly value: string;
  readonly pos?: SourcePos;
}

export interface BooleanLit {
  readonly kind: 'boolean';
  readonly value: boolean;
  readonly pos?: SourcePos;
}

export type TimeUnit = 'DD' | 'HH' | 'MI' | 'SS' | 'MS';

/** Milliseconds per time unit (docs/sql.md §5.1). */
export const TIME_UNIT_MS: Readonly<Record<TimeUnit, number>> = {
  DD: 86_400_000,
  HH: 3_600_000,
  MI: 60_000,
  SS: 1_000,
  MS: 1,
};

/** A time-unit keyword (`DD HH MI SS MS`, upper-cased). Meaningful only as a window's first argument. */
export interface TimeUnitLit {
  readonly kind: 'timeUnit';
  readonly unit: TimeUnit;
  readonly pos?: SourcePos;
}

export type BinaryOp =
  'OR' | 'AND' | '=' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | '/' | '%' | '&' | '|' | '^';

export interface BinaryExpr {
  readonly kind: 'binary';
  readonly op: BinaryOp;
  readonly left: Expr;
  readonly right: Expr;
  readonly pos?: SourcePos;
}

/** `obj->member` or `obj.member` (dot navigation after something that is not a plain `q.c` column reference). */
export interface NavigateExpr {
  readonly kind: 'navigate';
  readonly object: Expr;
  readonly member: string;
  /** true when written with `.`, false for `->` (affects output naming only) */
  readonly dot: boolean;
  readonly pos?: SourcePos;
}

/** `arr[i]` */
export interface IndexExpr {
  readonly kind: 'index';
  readonly array: Expr;
  readonly index: Expr;
  readonly pos?: SourcePos;
}

/** `arr[s:e]`, `arr[:e]`, `arr[s:]`, `arr[:]`, and `arr[]` (colon false, both bounds null). */
export interface SliceExpr {
  readonly kind: 'slice';
  readonly array: Expr;
  readonly start: Expr | null;
  readonly end: Expr | null;
  /** false only for `arr[]` */
  readonly colon: boolean;
  readonly pos?: SourcePos;
}

/**
 * `x [NOT] IN (e1, e2, …)` (list set, `array` null) or `x [NOT] IN operand` (`list` null, `array` evaluates to an
 * array). A parenthesised right-hand side is always the list form, even with one element.
 */
export interface InExpr {
  readonly kind: 'in';
  readonly negated: boolean;
  readonly value: Expr;
  readonly list: readonly Expr[] | null;
  readonly array: Expr | null;
  readonly pos?: SourcePos;
}

/** `x [NOT] BETWEEN low AND high`; low and high are single operands. */
export interface BetweenExpr {
  readonly kind: 'between';
  readonly negated: boolean;
  readonly value: Expr;
  readonly low: Expr;
  readonly high: Expr;
  readonly pos?: SourcePos;
}

/** `s [NOT] LIKE pattern`; the pattern is a single operand. */
export interface LikeExpr {
  readonly kind: 'like';
  readonly negated: boolean;
  readonly value: Expr;
  readonly pattern: Expr;
  readonly pos?: SourcePos;
}

export interface WhenClause {
  readonly when: Expr;
  readonly then: Expr;
}

/** Simple CASE when `value` is set, searched CASE otherwise. At least one WHEN. */
export interface CaseExpr {
  readonly kind: 'case';
  readonly value: Expr | null;
  readonly whens: readonly WhenClause[];
  readonly elseExpr: Expr | null;
  readonly pos?: SourcePos;
}

export interface SortField {
  readonly expr: Expr;
  readonly ascending: boolean;
}

/** `OVER ( [PARTITION BY …] [ORDER BY …] [WHEN …] )` after a function call; never empty. */
export interface OverClause {
  readonly partitionBy: readonly Expr[];
  readonly orderBy: readonly SortField[];
  readonly when: Expr | null;
}

/**
 * A function call. `name` is spelled as written (built-in lookup is case-insensitive). Arguments may include a
 * `wildcard` (`count(*)`) and, for window calls written outside GROUP BY, time units.
 */
export interface CallExpr {
  readonly kind: 'call';
  readonly name: string;
  readonly args: readonly Expr[];
  readonly over: OverClause | null;
  readonly pos?: SourcePos;
}

/**
 * `meta(arg)` / `mqtt(arg)` (docs/sql.md §2.9). `arg` is a `field` (`meta(k)`, `meta(s.k)`), a `navigate` chain rooted at
 * a field (`meta(k->sub)`, `meta(k.sub)`), or a `wildcard` without except/replace (`meta(*)`). For `mqtt` the arg is
 * always a plain field named `topic` or `messageid` (any case).
 */
export interface MetaExpr {
  readonly kind: 'meta';
  readonly func: 'meta' | 'mqtt';
  /** function name as written */
  readonly name: string;
  readonly arg: Expr;
  readonly pos?: SourcePos;
}

/** `( expr )`, kept so that output naming and bool-condition checks see the written shape. */
export interface ParenExpr {
  readonly kind: 'paren';
  readonly expr: Expr;
  readonly pos?: SourcePos;
}

// ---------------------------------------------------------------------------------------------------------------
// SELECT
// ---------------------------------------------------------------------------------------------------------------

export interface SelectField {
  readonly expr: Expr;
  /** `AS name`, or null. Never set for wildcards. */
  readonly alias: string | null;
  /**
   * Output key per docs/sql.md §4.3: the alias; the column name for `c`/`q.c`; the lower-cased function name for calls
   * (`meta` for meta()/mqtt()); `kuiper_field_N` for anything else (N counts these unnamed fields from 0 in order);
   * `*` for wildcards.
   */
  readonly name: string;
}

export interface SourceRef {
  /**
   * identifier parts and `/ # +` concatenated: `topic/sensor1`. Empty when the text names no source (`FROM`
   * followed by a keyword): the reference parses that too and fails later as an unknown stream.
   */
  readonly name: string;
  readonly alias: string | null;
  readonly pos?: SourcePos;
}

export type JoinType = 'inner' | 'left' | 'right' | 'full' | 'cross';

export interface JoinClause {
  readonly type: JoinType;
  readonly source: SourceRef;
  /** always null for cross joins */
  readonly on: Expr | null;
}

export type WindowType = 'tumbling' | 'hopping' | 'sliding' | 'session' | 'count';

/**
 * A window call in GROUP BY (docs/sql.md §5.1), arguments already checked: `unit` is null only for COUNTWINDOW;
 * `lengths` are the integer parameters after the unit, as written (not multiplied by the unit):
 * tumbling [length], hopping [length, hop], sliding [length] or [length, delay], session [maxDuration, timeout],
 * count [size] or [size, every].
 */
export interface WindowExpr {
  readonly kind: 'window';
  readonly type: WindowType;
  /** function name as written, e.g. `TumblingWindow` */
  readonly name: string;
  readonly unit: TimeUnit | null;
  readonly lengths: readonly number[];
  /** `FILTER (WHERE cond)` */
  readonly filter: Expr | null;
  /** `OVER (WHEN cond)` */
  readonly trigger: Expr | null;
  readonly pos?: SourcePos;
}

/** A GROUP BY item: a plain (non-window) expression or a window. */
export type Dimension = Expr | WindowExpr;

export interface SelectStatement {
  readonly kind: 'select';
  readonly fields: readonly SelectField[];
  readonly from: SourceRef;
  readonly joins: readonly JoinClause[];
  readonly where: Expr | null;
  /** GROUP BY items in written order, windows included */
  readonly dimensions: readonly Dimension[];
  /** the first window in `dimensions` (the only one that counts, docs/sql.md §4.7), or null */
  readonly window: WindowExpr | null;
  readonly having: Expr | null;
  readonly sorts: readonly SortField[];
  /** LIMIT n as written (an integer literal, possibly negative), or null */
  readonly limit: number | null;
}

// ---------------------------------------------------------------------------------------------------------------
// DDL
// ---------------------------------------------------------------------------------------------------------------

export type StreamKindWord = 'stream' | 'table';

export interface CreateStreamStatement {
  readonly kind: 'createStream';
  readonly streamKind: StreamKindWord;
  readonly name: string;
  /** null for `()` (schemaless) */
  readonly fields: StreamField[] | null;
  readonly options: StreamOptions;
}

export interface ShowStreamsStatement {
  readonly kind: 'showStreams';
  readonly streamKind: StreamKindWord;
}

export interface NamedStreamStatement {
  readonly kind: 'describeStream' | 'explainStream' | 'dropStream';
  readonly streamKind: StreamKindWord;
  readonly name: string;
}

export type DdlStatement = CreateStreamStatement | ShowStreamsStatement | NamedStreamStatement;

export type Statement = SelectStatement | DdlStatement;

// ---------------------------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------------------------

export function isWindow(d: Dimension): d is WindowExpr {
  return d.kind === 'window';
}

/** The binary operators whose result is a bool: comparisons, AND and OR. */
const BOOL_OPS: ReadonlySet<BinaryOp> = new Set<BinaryOp>(['=', '!=', '<', '<=', '>', '>=', 'AND', 'OR']);

/**
 * The written-shape "bool condition" test used by rule-creation checks (searched CASE WHEN, bool-expr function
 * arguments, docs/sql.md §2.6/§7.0): a boolean literal, or a top operator that is a comparison, AND, OR, IN, BETWEEN or
 * LIKE. Parentheses are looked through (`WHEN (a > 1)` passes), which accepts at least what eKuiper accepts.
 */
export function isBoolShaped(e: Expr): boolean {
  const u = unparen(e);
  switch (u.kind) {
    case 'boolean':
    case 'in':
    case 'between':
    case 'like':
      return true;
    case 'binary':
      return BOOL_OPS.has(u.op);
    default:
      return false;
  }
}

/** Strips any number of `paren` wrappers. */
export function unparen(e: Expr): Expr {
  let cur = e;
  while (cur.kind === 'paren') cur = cur.expr;
  return cur;
}
