/**
 * Go text/template-compatible templates with the sprig function library (docs/runtime.md §3.4), used by sinks'
 * `dataTemplate` and by dynamic properties such as an mqtt topic `a/{{.room}}`.
 *
 * Data are Eddy values: objects print as `map[k:v]`, arrays as `[a b]`, `bigint` as a Go int, `number` as a Go
 * float64 (`1e+06`), a missing key or null as `<no value>`.
 */
import { Executor } from './exec.js';
import { Parser, TemplateError, type Node } from './parse.js';

export { TemplateError } from './parse.js';

export interface Template {
  /** the source text */
  readonly text: string;
  /** Renders the template; throws {@link TemplateError} (`template: sink:1:2: executing …`) on a runtime error. */
  execute(data: unknown): string;
}

class CompiledTemplate implements Template {
  constructor(
    readonly text: string,
    private readonly name: string,
    private readonly trees: Map<string, Node[]>,
    private readonly location: (pos: number) => string,
  ) {}

  execute(data: unknown): string {
    return new Executor(this.name, this.trees, this.location).run(data);
  }
}

const CACHE_LIMIT = 2048;
const cache = new Map<string, Template>();

/**
 * Parses `text` once (cached by text and name) and returns the executable template. A syntax error throws a
 * {@link TemplateError} with Go's message, e.g. `template: sink:1: function "foo" not defined`.
 */
export function compileTemplate(text: string, name = 'sink'): Template {
  const key = name + '\u0000' + text;
  let t = cache.get(key);
  if (t) return t;
  const parser = new Parser(name, text);
  let trees: Map<string, Node[]>;
  try {
    trees = parser.parse().trees;
  } catch (e) {
    if (e instanceof RangeError) throw new TemplateError(`template: ${name}: max expression depth exceeded`);
    throw e;
  }
  checkFunctions(trees, name, parser);
  t = new CompiledTemplate(text, name, trees, (pos) => parser.location(pos));
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(key, t);
  return t;
}

/** Renders `text` against `data`; text without `{{` is returned as is (the common, non-templated property). */
export function renderTemplate(text: string, data: unknown): string {
  if (!text.includes('{{')) return text;
  return compileTemplate(text).execute(data);
}

import { funcMap } from './funcs.js';
import type { ArgNode, Pipe } from './parse.js';

/** sprig functions Eddy does not provide (certificates, bcrypt, DNS): named as such instead of "not defined". */
const UNSUPPORTED = new Set([
  'bcrypt',
  'htpasswd',
  'genPrivateKey',
  'derivePassword',
  'buildCustomCert',
  'genCA',
  'genCAWithKey',
  'genSelfSignedCert',
  'genSelfSignedCertWithKey',
  'genSignedCert',
  'genSignedCertWithKey',
  'getHostByName',
  'semver',
  'semverCompare',
]);

/** Go rejects calls of unknown functions at parse time. */
function checkFunctions(trees: Map<string, Node[]>, name: string, parser: Parser): void {
  const funcs = funcMap();
  const checkArg = (a: ArgNode): void => {
    if (a.t === 'ident' && a.name !== 'and' && a.name !== 'or' && !Object.hasOwn(funcs, a.name)) {
      const why = UNSUPPORTED.has(a.name) ? 'is not supported by Eddy' : 'not defined';
      throw new TemplateError(`template: ${name}:${parser.lineOf(a.pos)}: function "${a.name}" ${why}`);
    }
    if (a.t === 'pipe') checkPipe(a.pipe);
    if (a.t === 'chain') checkArg(a.node);
  };
  const checkPipe = (p: Pipe): void => {
    for (const c of p.cmds) for (const a of c.args) checkArg(a);
  };
  const walk = (list: Node[]): void => {
    for (const n of list) {
      switch (n.t) {
        case 'action':
          checkPipe(n.pipe);
          break;
        case 'if':
        case 'with':
        case 'range':
          checkPipe(n.pipe);
          walk(n.list);
          if (n.elseList) walk(n.elseList);
          break;
        case 'template':
          if (n.pipe) checkPipe(n.pipe);
          break;
      }
    }
  };
  for (const list of trees.values()) walk(list);
}
