/**
 * MQTT topic-filter dispatch (docs/runtime.md §2.5): finds the subscriptions matching a topic in time proportional
 * to the topic's levels, whatever the number of subscriptions. Filters without wildcards are one map lookup; the
 * others live in a trie of levels with `+` (one level) and `#` (this level and every one below) children.
 * As brokers do, wildcards in the first level never match a topic starting with `$` (`$SYS/…`), and a shared
 * subscription (`$share/<group>/<filter>`, `$queue/<filter>`) matches as its inner filter.
 */

class TrieNode<T> {
  readonly children = new Map<string, TrieNode<T>>();
  plus: TrieNode<T> | undefined;
  /** values of filters ending in `#` here (they also match the parent level: `a/#` matches `a`) */
  hash: T[] | undefined;
  /** values of filters ending exactly here */
  here: T[] | undefined;

  isEmpty(): boolean {
    return this.children.size === 0 && this.plus === undefined && this.hash === undefined && this.here === undefined;
  }
}

/** The filter that topics are matched against: a shared subscription's prefix is dropped. */
export function matchingFilter(filter: string): string {
  if (filter.startsWith('$share/')) {
    const slash = filter.indexOf('/', 7);
    return slash < 0 ? filter : filter.slice(slash + 1);
  }
  if (filter.startsWith('$queue/')) return filter.slice(7);
  return filter;
}

function hasWildcard(filter: string): boolean {
  return filter.includes('+') || filter.includes('#');
}

function remove<T>(list: T[] | undefined, value: T): T[] | undefined {
  if (!list) return undefined;
  const i = list.indexOf(value);
  if (i >= 0) list.splice(i, 1);
  return list.length === 0 ? undefined : list;
}

/**
 * A multimap from topic filters to values. The same value may be added under several filters; `match` visits it
 * once per matching filter, as a broker delivers a message once per matching subscription.
 */
export class TopicTrie<T> {
  private readonly exact = new Map<string, T[]>();
  private readonly root = new TrieNode<T>();
  private wildcards = 0;

  /** Number of (filter, value) entries. */
  size = 0;

  add(filter: string, value: T): void {
    const f = matchingFilter(filter);
    this.size++;
    if (!hasWildcard(f)) {
      const list = this.exact.get(f);
      if (list) list.push(value);
      else this.exact.set(f, [value]);
      return;
    }
    this.wildcards++;
    let node = this.root;
    const levels = f.split('/');
    for (let i = 0; i < levels.length; i++) {
      const level = levels[i];
      if (level === '#') {
        (node.hash ??= []).push(value);
        return;
      }
      if (level === '+') node = node.plus ??= new TrieNode<T>();
      else {
        let next = node.children.get(level);
        if (!next) node.children.set(level, (next = new TrieNode<T>()));
        node = next;
      }
    }
    (node.here ??= []).push(value);
  }

  /** Removes one entry added with `add(filter, value)`; returns whether it was there. */
  delete(filter: string, value: T): boolean {
    const f = matchingFilter(filter);
    if (!hasWildcard(f)) {
      const list = this.exact.get(f);
      if (!list || !list.includes(value)) return false;
      const rest = remove(list, value);
      if (!rest) this.exact.delete(f);
      this.size--;
      return true;
    }
    const levels = f.split('/');
    const path: Array<[TrieNode<T>, string]> = [];
    let node: TrieNode<T> | undefined = this.root;
    let found = false;
    for (let i = 0; i < levels.length && node; i++) {
      const level = levels[i];
      if (level === '#') {
        if (node.hash?.includes(value)) {
          node.hash = remove(node.hash, value);
          found = true;
        }
        break;
      }
      path.push([node, level]);
      node = level === '+' ? node.plus : node.children.get(level);
      if (node && i === levels.length - 1 && node.here?.includes(value)) {
        node.here = remove(node.here, value);
        found = true;
      }
    }
    if (!found) return false;
    this.size--;
    this.wildcards--;
    // prune the emptied branch, deepest first
    for (let i = path.length - 1; i >= 0; i--) {
      const [parent, level] = path[i];
      const child = level === '+' ? parent.plus : parent.children.get(level);
      if (!child || !child.isEmpty()) break;
      if (level === '+') parent.plus = undefined;
      else parent.children.delete(level);
    }
    return true;
  }

  /**
   * Calls `visit` for every value whose filter matches `topic`. Allocation-free for exact filters; the wildcard
   * walk costs one substring per level of the topic.
   */
  match(topic: string, visit: (value: T) => void): void {
    const list = this.exact.get(topic);
    if (list) for (let i = 0; i < list.length; i++) visit(list[i]);
    if (this.wildcards === 0) return;
    this.walk(this.root, topic, 0, topic.charCodeAt(0) === 36 /* $ */, visit);
  }

  /** Whether any filter matches `topic`. */
  matches(topic: string): boolean {
    let any = false;
    this.match(topic, () => {
      any = true;
    });
    return any;
  }

  private walk(node: TrieNode<T>, topic: string, start: number, dollar: boolean, visit: (value: T) => void): void {
    // `#` matches the remaining levels, including none (`a/#` matches `a`); not at the root of a `$` topic
    if (node.hash && !dollar) for (const v of node.hash) visit(v);
    if (start > topic.length) {
      // every level consumed
      if (node.here) for (const v of node.here) visit(v);
      return;
    }
    let end = topic.indexOf('/', start);
    if (end < 0) end = topic.length;
    const level = topic.slice(start, end);
    const child = node.children.get(level);
    if (child) this.walk(child, topic, end + 1, false, visit);
    if (node.plus && !dollar) this.walk(node.plus, topic, end + 1, false, visit);
  }
}
