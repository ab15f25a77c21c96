/**
 * The structural side of graph rules (docs/runtime.md §1.4): the edge lists, the order nodes are planned in, and the
 * row/collection kinds that flow along the edges, with the texts eKuiper rejects a graph with.
 */

/** What travels on an edge: rows or collections (bit 1 = row, bit 2 = collection; 0 = same as the input). */
export enum Io {
  Same = 0,
  Row = 1,
  Collection = 2,
  Any = 3,
}

/** Row shape: a single emitter's row or a merged (joined) row; 0 = same as the input. */
export enum RowShape {
  Same = 0,
  Single = 1,
  Merged = 2,
  Any = 3,
}

/** Collection shape: plain or grouped; 0 = same as the input. */
export enum CollShape {
  Same = 0,
  Single = 1,
  Grouped = 2,
  Any = 3,
}

export interface IoType {
  readonly type: Io;
  readonly row: RowShape;
  readonly coll: CollShape;
  readonly multi: boolean;
}

const T = (type: Io, row: RowShape, coll: CollShape, multi = false): IoType => ({ type, row, coll, multi });

/** Output of every source node. */
export const SOURCE_IO: IoType = T(Io.Row, RowShape.Single, CollShape.Any);

/** Accepted input and produced output per operator type. */
export const OP_IO: Readonly<Record<string, readonly [IoType, IoType]>> = {
  aggfunc: [T(Io.Collection, RowShape.Any, CollShape.Any), T(Io.Collection, RowShape.Any, CollShape.Grouped)],
  filter: [T(Io.Any, RowShape.Any, CollShape.Any), T(Io.Same, RowShape.Same, CollShape.Same)],
  function: [T(Io.Any, RowShape.Any, CollShape.Single), T(Io.Same, RowShape.Same, CollShape.Same)],
  groupby: [T(Io.Collection, RowShape.Any, CollShape.Single), T(Io.Collection, RowShape.Any, CollShape.Grouped)],
  join: [T(Io.Any, RowShape.Single, CollShape.Single, true), T(Io.Collection, RowShape.Merged, CollShape.Single)],
  orderby: [T(Io.Collection, RowShape.Any, CollShape.Any), T(Io.Same, RowShape.Same, CollShape.Same)],
  pick: [T(Io.Any, RowShape.Any, CollShape.Any), T(Io.Same, RowShape.Same, CollShape.Same)],
  watermark: [T(Io.Row, RowShape.Any, CollShape.Any, true), T(Io.Same, RowShape.Same, CollShape.Same)],
  window: [T(Io.Row, RowShape.Any, CollShape.Any, true), T(Io.Collection, RowShape.Single, CollShape.Single)],
  switch: [T(Io.Any, RowShape.Any, CollShape.Any), T(Io.Same, RowShape.Same, CollShape.Same)],
  script: [T(Io.Any, RowShape.Any, CollShape.Any), T(Io.Same, RowShape.Same, CollShape.Same)],
};

const IO_NAMES: Record<number, string> = {
  0: 'same',
  1: 'row',
  2: 'collection',
  3: 'any',
};
const ROW_NAMES: Record<number, string> = {
  0: 'same',
  1: 'single emitter row',
  2: 'merged row',
  3: 'any',
};
const COLL_NAMES: Record<number, string> = {
  0: 'same',
  1: 'non-grouped collection',
  2: 'grouped collection',
  3: 'any',
};

/** An operator's input or output kinds in words, as eKuiper's operator metadata names them (`/metadata/operators`). */
export function ioDescription(t: IoType): { type: string; rowType: string; collectionType: string } {
  const word: Record<number, string> = { 0: 'same', 1: 'row', 2: 'collection', 3: 'any' };
  const row: Record<number, string> = { 0: 'same', 1: 'single', 2: 'merged', 3: 'any' };
  const coll: Record<number, string> = { 0: 'same', 1: 'single', 2: 'grouped', 3: 'any' };
  return { type: word[t.type], rowType: row[t.row], collectionType: coll[t.coll] };
}

/** Why `value` cannot feed an input accepting `accept`, or undefined when it can. */
export function misfit(value: IoType, accept: IoType): string | undefined {
  if ((value.type & accept.type) === 0)
    return `input type mismatch, expect ${IO_NAMES[accept.type]}, got ${IO_NAMES[value.type]}`;
  if ((value.row & accept.row) === 0)
    return `row type mismatch, expect ${ROW_NAMES[accept.row]}, got ${ROW_NAMES[value.row]}`;
  if ((value.coll & accept.coll) === 0) {
    return `collection type mismatch, expect ${COLL_NAMES[accept.coll]}, got ${COLL_NAMES[value.coll]}`;
  }
  return undefined;
}

/** The output kind of an operator whose declared output is `out`, fed with `input`. */
export function mapOut(input: IoType, out: IoType): IoType {
  if (out.type === Io.Same) return T(input.type, input.row, input.coll);
  return T(
    out.type,
    out.row === RowShape.Same ? input.row : out.row,
    out.coll === CollShape.Same ? input.coll : out.coll,
  );
}

/** One incoming edge: the upstream node and, for a switch, the case index it leaves from (0 otherwise). */
export interface InEdge {
  readonly from: string;
  readonly port: number;
}

/**
 * The incoming edges of every node. A target in a nested array at position i of a node's edge list is fed by case i
 * of that (switch) node; a plain target is fed by case 0.
 */
export function reverseEdges(
  edges: ReadonlyMap<string, ReadonlyArray<string | readonly string[]>>,
  defined: (n: string) => boolean,
): Map<string, InEdge[]> {
  const rev = new Map<string, InEdge[]>();
  const add = (to: string, e: InEdge): void => {
    const l = rev.get(to);
    if (l) l.push(e);
    else rev.set(to, [e]);
  };
  for (const [from, tos] of edges) {
    if (!defined(from)) throw new Error(`node ${from} is not defined`);
    tos.forEach((to, i) => {
      if (typeof to === 'string') {
        if (!defined(to)) throw new Error(`node ${to} is not defined`);
        add(to, { from, port: 0 });
        return;
      }
      for (const t of to) {
        if (!defined(t)) throw new Error(`node ${t} is not defined`);
        add(t, { from, port: i });
      }
    });
  }
  // a switch's nested targets come after its plain ones, case by case, as eKuiper collects them
  for (const l of rev.values()) l.sort((a, b) => a.port - b.port);
  return rev;
}

/**
 * Nodes in planning order: depth-first from the sources, a node with several inputs placed when its last input is
 * reached. Nodes that no source reaches are reported as eKuiper does (`can't find node `, with no name).
 */
export function orderNodes(
  sources: readonly string[],
  edges: ReadonlyMap<string, ReadonlyArray<string | readonly string[]>>,
  inbound: ReadonlyMap<string, readonly InEdge[]>,
  total: number,
): string[] {
  const remaining = new Map<string, number>();
  for (const [n, ins] of inbound) remaining.set(n, ins.length);
  const order: string[] = [];
  const placed = new Set<string>();
  const visit = (targets: readonly string[]): void => {
    for (const t of targets) {
      const left = remaining.get(t) ?? 0;
      if (left > 1) {
        remaining.set(t, left - 1);
        continue;
      }
      // a cycle reaches a node again: eKuiper never terminates there, we refuse the graph
      if (placed.has(t)) throw new Error(`can't find node ${t}`);
      placed.add(t);
      order.push(t);
      const next: string[] = [];
      for (const to of edges.get(t) ?? []) {
        if (typeof to === 'string') next.push(to);
        else next.push(...to);
      }
      visit(next);
    }
  };
  visit(sources);
  if (order.length < total) throw new Error("can't find node ");
  return order;
}

/**
 * The operator palette of eKuiper's UI (`GET /metadata/operators`, docs/rest-api.md §16.13): every graph-rule operator
 * with the kinds it accepts and produces, in the shape of eKuiper's `etc/ops/*.json` files.
 */
export function operatorCatalog(): unknown[] {
  return Object.entries(OP_IO).map(([name, [input, output]]) => ({
    name,
    about: {
      trial: false,
      author: { name: 'Eddy', email: '', company: '', website: '' },
      helpUrl: {
        en_US: 'https://ekuiper.org/docs/en/v1.14/guide/rules/graph_rule.html',
        zh_CN: 'https://ekuiper.org/docs/zh/v1.14/guide/rules/graph_rule.html',
      },
      description: { en_US: `graph rule operator ${name}`, zh_CN: `graph rule operator ${name}` },
    },
    properties: [],
    node: {
      display: true,
      category: 'op',
      input: ioDescription(input),
      output: ioDescription(output),
      icon: 'iconPath',
      label: { en: name, zh: name },
    },
  }));
}
