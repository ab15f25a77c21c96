/**
 * Where each rule runs (docs/cluster.md §3.1): rendezvous hashing over the live nodes. Every node scores every
 * (group, node) pair with the same hash and the rule goes to the best-scoring live node, so all nodes agree without
 * talking, and a node that joins or leaves moves only the rules it wins or held. Rules reading the same SHARED stream
 * form one group (one source connection serves them all); the rule option `node` pins a rule to one node; the
 * instances of a rule with `parallelism` N go to the N best nodes of its ranking.
 */

/** What is placed: a rule, or one instance of a parallel rule. Its id is also its lease's and its state's. */
export interface Unit {
  /** `<rule>` or `<rule>#<instance>` (rule ids cannot hold `#`) */
  id: string;
  rule: string;
  /** the key of the ranking: the rule id, or `shared:<stream>` for rules reading a SHARED stream */
  group: string;
  /** the one node allowed to run it (`node` option), if any */
  pinned?: string;
  /** the instance of a parallel rule */
  instance?: number;
}

/** The units of a rule: itself, or one per instance. */
export function unitsOf(rule: string, opts: { parallelism: number; node: string }, sharedStream?: string): Unit[] {
  const base = { rule, group: sharedStream !== undefined ? `shared:${sharedStream}` : rule };
  const pin = opts.node ? { pinned: opts.node } : {};
  if (opts.parallelism <= 1) return [{ id: rule, ...base, ...pin }];
  return Array.from({ length: opts.parallelism }, (_, i) => ({ id: `${rule}#${i}`, ...base, ...pin, instance: i }));
}

/** The rule of a unit id. */
export function ruleOfUnit(unit: string): string {
  const i = unit.indexOf('#');
  return i < 0 ? unit : unit.slice(0, i);
}

/** The instance of a unit id, or undefined for a whole rule. */
export function instanceOfUnit(unit: string): number | undefined {
  const i = unit.indexOf('#');
  return i < 0 ? undefined : Number(unit.slice(i + 1));
}

/** A 52-bit score of a text: two FNV-1a hashes with different bases, each finished by murmur3's mixing step. */
export function score(text: string): number {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 13);
  }
  return (fmix(a) >>> 0) * 0x100000 + (fmix(b) >>> 12);
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** The nodes ordered by their score for `group`, best first. */
export function rank(group: string, nodes: readonly string[]): string[] {
  return nodes
    .map((n) => ({ n, s: score(`${group}\u0000${n}`) }))
    .sort((x, y) => y.s - x.s || (x.n < y.n ? -1 : 1))
    .map((x) => x.n);
}

/**
 * The node that runs a unit, given the live nodes (sorted or not); undefined when none may (a pinned node that is not
 * alive, or no node at all). Instance i of a parallel rule goes to the i-th best node, wrapping around when there are
 * fewer live nodes than instances (a node then runs several).
 */
export function ownerOf(unit: Unit, live: readonly string[]): string | undefined {
  if (unit.pinned !== undefined) return live.includes(unit.pinned) ? unit.pinned : undefined;
  if (live.length === 0) return undefined;
  const ranked = rank(unit.group, live);
  return ranked[(unit.instance ?? 0) % ranked.length];
}
