/**
 * The window types (docs/sql.md §3.6), each declared once: its function name, how its arguments are written, how its
 * lengths become the window's length, interval and alignment, and the checks of a graph rule's `window` node
 * (docs/runtime.md §1.4). The parser, the planner and graph rules read these declarations; the operator of each type
 * is `runtime/windows.ts` `createWindowNode`. A type added to {@link WindowType} fails to compile here until it is
 * declared.
 */
import type { WindowType } from './ast.js';

/** A window's extent: ms for a timed window (rows for a count window), and the parameter its alignment uses. */
export interface WindowSizes {
  readonly length: number;
  /** hop, session timeout or sliding delay (0: none); for a count window the rows between emissions */
  readonly interval: number;
  readonly alignParam: number;
}

export interface WindowDeclaration {
  /** the SQL function, lower case */
  readonly name: string;
  /** the first argument is a time unit (`ss`, `ms`…); a count window takes integers only */
  readonly timed: boolean;
  /** the argument counts accepted, the time unit included */
  readonly arities: readonly number[];
  /** the sizes from the written lengths (after the unit) and the unit's length in ms (1 for a count window) */
  sizes(lengths: readonly number[], unitMs: number): WindowSizes;
  /** in processing time, its windows close on the clock whatever the rows: WHERE may run below it */
  readonly closesOnClock: boolean;
  /**
   * A graph rule's `window` node: what is wrong with its `size` and `interval` (eKuiper's texts), and the lengths they
   * stand for
   */
  graph(size: number, interval: number): { problem?: string; lengths: number[] };
}

const timedSizes =
  (interval: (lengths: readonly number[]) => number | undefined, alignOnInterval = false) =>
  (lengths: readonly number[], unitMs: number): WindowSizes => {
    const iv = interval(lengths);
    return {
      length: lengths[0] * unitMs,
      interval: iv === undefined ? lengths[0] * unitMs : iv * unitMs,
      alignParam: alignOnInterval ? lengths[1] : lengths[0],
    };
  };

const equalToSize = (size: number, interval: number): string | undefined =>
  interval !== 0 && interval !== size ? 'tumbling window interval must equal to size' : undefined;

export const WINDOW_TYPES: { readonly [T in WindowType]: WindowDeclaration } = {
  tumbling: {
    name: 'tumblingwindow',
    timed: true,
    arities: [2],
    sizes: timedSizes(() => undefined),
    closesOnClock: true,
    graph: (size, interval) => ({ problem: equalToSize(size, interval), lengths: [size] }),
  },
  hopping: {
    name: 'hoppingwindow',
    timed: true,
    arities: [3],
    sizes: timedSizes((l) => l[1], true),
    closesOnClock: true,
    graph: (size, interval) => ({
      problem:
        interval <= 0
          ? 'hopping window interval must be greater than 0'
          : interval > size
            ? 'hopping window interval must be less than size'
            : undefined,
      lengths: [size, interval],
    }),
  },
  sliding: {
    name: 'slidingwindow',
    timed: true,
    arities: [2, 3],
    // the optional delay; none is 0
    sizes: timedSizes((l) => l[1] ?? 0),
    closesOnClock: false,
    // a graph window has no delay
    graph: (size, interval) => ({ problem: equalToSize(size, interval), lengths: [size] }),
  },
  session: {
    name: 'sessionwindow',
    timed: true,
    arities: [3],
    sizes: timedSizes((l) => l[1]),
    closesOnClock: true,
    graph: (size, interval) => ({
      problem: interval <= 0 ? 'hopping window interval must be greater than 0' : undefined,
      lengths: [size, interval],
    }),
  },
  count: {
    name: 'countwindow',
    timed: false,
    arities: [1, 2],
    sizes: (l) => ({ length: l[0], interval: l[1] ?? l[0], alignParam: l[0] }),
    closesOnClock: false,
    graph: (size, interval) => ({
      problem:
        interval < 0
          ? 'count window interval must be greater or equal to 0'
          : interval > size
            ? 'count window interval must be less than size'
            : undefined,
      lengths: interval === 0 ? [size] : [size, interval],
    }),
  },
};

const BY_NAME = new Map(Object.entries(WINDOW_TYPES).map(([type, d]) => [d.name, type as WindowType]));

/** The window type of a window function's name, case-insensitively; undefined for any other name. */
export function windowFunctionType(name: string): WindowType | undefined {
  return BY_NAME.get(name.toLowerCase());
}
