/**
 * Executes a parsed Go template against template data, with Go's semantics for missing keys (`<no value>`),
 * truth, variables and scoping, range over lists and maps (sorted keys), and Go-style runtime errors.
 */
import { DateTime } from '../values/value.js';
import { compareKeys, formatV, goType, isMap } from './fmt.js';
import { FuncError, funcMap, timeMethod, truth, type ParamKind, type TemplateFunc } from './funcs.js';
import { TemplateError, nodeString, type ArgNode, type Command, type Node, type Pipe } from './parse.js';

const MAX_DEPTH = 100000;

/** Marks "no final argument" in a pipeline stage (distinct from an undefined value). */
const MISSING: unique symbol = Symbol('missing');
type Final = unknown | typeof MISSING;

class ExecError extends Error {}
class BreakSignal {}
class ContinueSignal {}
const BREAK = new BreakSignal();
const CONTINUE = new ContinueSignal();

interface Variable {
  name: string;
  value: unknown;
}

export class Executor {
  private out = '';
  private vars: Variable[] = [];
  private depth = 0;
  private at: ArgNode | null = null;
  private atPos = 0;
  private readonly funcs = funcMap();

  constructor(
    private readonly name: string,
    private readonly trees: Map<string, Node[]>,
    private readonly location: (pos: number) => string,
  ) {}

  run(data: unknown): string {
    const root = this.trees.get(this.name);
    if (!root) throw new TemplateError(`template: ${this.name}: "${this.name}" is an incomplete or empty template`);
    this.out = '';
    this.vars = [{ name: '$', value: data }];
    try {
      this.walkList(data, root);
    } catch (e) {
      if (e instanceof ExecError) {
        const where = this.at ? ` at <${nodeString(this.at)}>` : '';
        throw new TemplateError(
          `template: ${this.location(this.atPos)}: executing "${this.name}"${where}: ${e.message}`,
        );
      }
      // deep recursion (a template calling itself) ends on the JS stack before Go's depth limit
      if (e instanceof RangeError)
        throw new TemplateError(
          `template: ${this.location(this.atPos)}: executing "${this.name}": exceeded maximum template depth (${MAX_DEPTH})`,
        );
      throw e;
    }
    return this.out;
  }

  private fail(msg: string): never {
    throw new ExecError(msg);
  }

  private walkList(dot: unknown, list: Node[]): void {
    for (const n of list) this.walk(dot, n);
  }

  private walk(dot: unknown, n: Node): void {
    switch (n.t) {
      case 'text':
        this.out += n.text;
        return;
      case 'action': {
        const v = this.evalPipeline(dot, n.pipe);
        if (n.pipe.decl.length === 0) this.out += printValue(v);
        return;
      }
      case 'if':
      case 'with': {
        const mark = this.vars.length;
        const v = this.evalPipeline(dot, n.pipe);
        if (truth(v)) this.walkList(n.t === 'with' ? v : dot, n.list);
        else if (n.elseList) this.walkList(dot, n.elseList);
        this.vars.length = mark;
        return;
      }
      case 'range':
        this.walkRange(dot, n);
        return;
      case 'template': {
        const tree = this.trees.get(n.name);
        this.atPos = n.pos;
        if (!tree) this.fail(`no such template "${n.name}"`);
        if (++this.depth > MAX_DEPTH) this.fail(`exceeded maximum template depth (${MAX_DEPTH})`);
        const newDot = n.pipe ? this.evalPipeline(dot, n.pipe) : undefined;
        const saved = this.vars;
        this.vars = [{ name: '$', value: newDot }];
        this.walkList(newDot, tree);
        this.vars = saved;
        this.depth--;
        return;
      }
      case 'break':
        throw BREAK;
      case 'continue':
        throw CONTINUE;
    }
  }

  private walkRange(dot: unknown, n: Extract<Node, { t: 'if' | 'with' | 'range' }>): void {
    const mark = this.vars.length;
    const val = this.evalPipeline(dot, n.pipe);
    const bodyMark = this.vars.length;
    const decl = n.pipe.decl;
    const one = (key: unknown, elem: unknown): boolean => {
      if (decl.length) {
        if (n.pipe.isAssign) {
          if (decl.length > 1) {
            this.setVar(decl[0], key);
            this.setVar(decl[1], elem);
          } else this.setVar(decl[0], elem);
        } else if (decl.length > 1) {
          this.vars[this.vars.length - 2].value = key;
          this.vars[this.vars.length - 1].value = elem;
        } else this.vars[this.vars.length - 1].value = elem;
      }
      try {
        this.walkList(elem, n.list);
      } catch (e) {
        if (e === BREAK) return false;
        if (e !== CONTINUE) throw e;
      } finally {
        this.vars.length = bodyMark;
      }
      return true;
    };
    let iterated = false;
    if (Array.isArray(val)) {
      iterated = val.length > 0;
      for (let i = 0; i < val.length; i++) if (!one(BigInt(i), val[i])) break;
    } else if (val instanceof Uint8Array) {
      iterated = val.length > 0;
      for (let i = 0; i < val.length; i++) if (!one(BigInt(i), BigInt(val[i]))) break;
    } else if (isMap(val)) {
      const keys = Object.keys(val).sort(compareKeys);
      iterated = keys.length > 0;
      for (const k of keys) if (!one(k, val[k])) break;
    } else if (typeof val === 'bigint') {
      if (decl.length > 1) this.fail(`can't use ${val} to iterate over more than one variable`);
      iterated = val > 0n;
      for (let i = 0n; i < val; i++) if (!one(i, i)) break;
    } else if (val !== null && val !== undefined) {
      this.fail(`range can't iterate over ${formatV(val)}`);
    }
    if (!iterated && n.elseList) this.walkList(dot, n.elseList);
    this.vars.length = mark;
  }

  private setVar(name: string, value: unknown): void {
    for (let i = this.vars.length - 1; i >= 0; i--)
      if (this.vars[i].name === name) {
        this.vars[i].value = value;
        return;
      }
    this.fail(`undefined variable: ${name}`);
  }

  private varValue(name: string): unknown {
    for (let i = this.vars.length - 1; i >= 0; i--) if (this.vars[i].name === name) return this.vars[i].value;
    return this.fail(`undefined variable: ${name}`);
  }

  private evalPipeline(dot: unknown, pipe: Pipe): unknown {
    let value: unknown = MISSING;
    for (const cmd of pipe.cmds) {
      value = this.evalCommand(dot, cmd, value);
    }
    // a nil interface result is "no value" (Go digs one level into interface{} results)
    if (value === null) value = undefined;
    for (const d of pipe.decl) {
      if (pipe.isAssign) this.setVar(d, value);
      else this.vars.push({ name: d, value });
    }
    return value;
  }

  private evalCommand(dot: unknown, cmd: Command, final: Final): unknown {
    const first = cmd.args[0];
    this.at = first;
    this.atPos = first.pos;
    switch (first.t) {
      case 'field':
        return this.evalFieldChain(dot, dot, first, first.idents, cmd.args, final);
      case 'chain': {
        const recv = this.evalArgValue(dot, first.node);
        return this.evalFieldChain(dot, recv, first, first.idents, cmd.args, final);
      }
      case 'ident':
        return this.evalFunction(dot, first.name, cmd, final);
      case 'pipe':
        this.notAFunction(cmd.args, final);
        return this.evalPipeline(dot, first.pipe);
      case 'var': {
        const v = this.varValue(first.name);
        if (first.idents.length === 0) {
          this.notAFunction(cmd.args, final);
          return v;
        }
        return this.evalFieldChain(dot, v, first, first.idents, cmd.args, final);
      }
    }
    this.notAFunction(cmd.args, final);
    switch (first.t) {
      case 'bool':
        return first.value;
      case 'dot':
        return dot;
      case 'nil':
        return this.fail('nil is not a command');
      case 'num':
        return first.isInt ? first.int! : first.float;
      case 'str':
        return first.value;
    }
  }

  private notAFunction(args: ArgNode[], final: Final): void {
    if (args.length > 1 || final !== MISSING) this.fail(`can't give argument to non-function ${nodeString(args[0])}`);
  }

  private evalFieldChain(
    dot: unknown,
    receiver: unknown,
    node: ArgNode,
    idents: string[],
    args: ArgNode[],
    final: Final,
  ): unknown {
    let r = receiver;
    // Go names the static type in errors: the data's own type first, `interface {}` for values read from a map
    let typed = receiver === dot || node.t === 'var';
    for (let i = 0; i < idents.length - 1; i++) {
      r = this.evalField(dot, idents[i], node, [], MISSING, r, typed);
      typed = false;
    }
    return this.evalField(dot, idents[idents.length - 1], node, args, final, r, typed);
  }

  private evalField(
    dot: unknown,
    name: string,
    node: ArgNode,
    args: ArgNode[],
    final: Final,
    receiver: unknown,
    typed = true,
  ): unknown {
    if (receiver === undefined) return undefined;
    if (receiver === null) this.fail(`nil pointer evaluating interface {}.${name}`);
    const hasArgs = args.length > 1 || final !== MISSING;
    if (receiver instanceof DateTime) {
      const argv = args.slice(1).map((a) => this.evalArgValue(dot, a));
      if (final !== MISSING) argv.push(final);
      try {
        const r = timeMethod(receiver, name, argv);
        if (r !== undefined) return r;
      } catch (e) {
        if (e instanceof FuncError) this.fail(`error calling ${name}: ${e.message}`);
        throw e;
      }
      this.fail(`can't evaluate field ${name} in type time.Time`);
    }
    if (isMap(receiver)) {
      if (hasArgs) this.fail(`${name} is not a method but has arguments`);
      return Object.hasOwn(receiver, name) ? receiver[name] : undefined;
    }
    void node;
    return this.fail(`can't evaluate field ${name} in type ${typed ? dataType(receiver) : 'interface {}'}`);
  }

  /** Evaluates an argument node to its value (no type conversion). */
  private evalArgValue(dot: unknown, n: ArgNode): unknown {
    switch (n.t) {
      case 'dot':
        return dot;
      case 'nil':
        return null;
      case 'bool':
        return n.value;
      case 'str':
        return n.value;
      case 'num':
        return n.isInt ? n.int! : n.float;
      case 'field':
        return this.evalFieldChain(dot, dot, n, n.idents, [n], MISSING);
      case 'var': {
        const v = this.varValue(n.name);
        return n.idents.length ? this.evalFieldChain(dot, v, n, n.idents, [n], MISSING) : v;
      }
      case 'pipe':
        return this.evalPipeline(dot, n.pipe);
      case 'chain':
        return this.evalFieldChain(dot, this.evalArgValue(dot, n.node), n, n.idents, [n], MISSING);
      case 'ident':
        return this.evalFunction(dot, n.name, { pos: n.pos, args: [n] }, MISSING);
    }
  }

  /** Evaluates an argument for a parameter of kind `kind`, converting constants and checking types as Go does. */
  private evalArg(dot: unknown, kind: ParamKind, n: ArgNode): unknown {
    this.at = n;
    this.atPos = n.pos;
    if (n.t === 'num') {
      switch (kind) {
        case 'int':
          if (!n.isInt && n.int === undefined) this.fail(`expected integer; found ${n.text}`);
          return n.int!;
        case 'float':
          return n.float;
        case 'string':
          return this.fail(`expected string; found ${n.text}`);
        case 'bool':
          return this.fail(`expected bool; found ${n.text}`);
      }
      return n.isInt ? n.int! : n.float;
    }
    if (n.t === 'nil') {
      if (kind === 'any' || kind === 'raw') return null;
      return this.fail(`cannot assign nil to ${goKind(kind)}`);
    }
    if (n.t === 'str' && kind !== 'string' && kind !== 'any' && kind !== 'raw')
      this.fail(`expected ${goKind(kind)}; found ${n.text}`);
    if (n.t === 'bool' && kind !== 'bool' && kind !== 'any' && kind !== 'raw')
      this.fail(`expected ${goKind(kind)}; found ${n.value}`);
    return this.validate(this.evalArgValue(dot, n), kind);
  }

  private validate(v: unknown, kind: ParamKind): unknown {
    switch (kind) {
      case 'raw':
        return v;
      case 'any':
        return v === undefined ? null : v;
    }
    if (v === undefined || v === null) return this.fail(`invalid value; expected ${goKind(kind)}`);
    const ok =
      (kind === 'string' && typeof v === 'string') ||
      (kind === 'int' && typeof v === 'bigint') ||
      (kind === 'float' && typeof v === 'number') ||
      (kind === 'bool' && typeof v === 'boolean');
    if (!ok) this.fail(`wrong type for value; expected ${goKind(kind)}; got ${goType(v)}`);
    return v;
  }

  private evalFunction(dot: unknown, name: string, cmd: Command, final: Final): unknown {
    const args = cmd.args;
    if (name === 'and' || name === 'or') return this.evalAndOr(dot, name, args, final);
    const fn: TemplateFunc | undefined = this.funcs[name];
    if (!fn) return this.fail(`"${name}" is not a defined function`);
    const given = args.length - 1 + (final !== MISSING ? 1 : 0);
    const fixed = fn.params.length;
    if (fn.variadic) {
      if (given < fixed) this.fail(`wrong number of args for ${name}: want at least ${fixed} got ${given}`);
    } else if (given !== fixed) this.fail(`wrong number of args for ${name}: want ${fixed} got ${given}`);
    const argv: unknown[] = [];
    const kindAt = (i: number): ParamKind => (i < fixed ? fn.params[i] : fn.variadic!);
    for (let i = 1; i < args.length; i++) argv.push(this.evalArg(dot, kindAt(i - 1), args[i]));
    if (final !== MISSING) argv.push(this.validate(final, kindAt(argv.length)));
    this.at = args[0];
    this.atPos = args[0].pos;
    try {
      return (fn.fn as (...a: unknown[]) => unknown)(...argv);
    } catch (e) {
      // Go recovers a function's panic as the error of the call
      if (e instanceof ExecError || e instanceof TemplateError) throw e;
      this.fail(`error calling ${name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private evalAndOr(dot: unknown, name: string, args: ArgNode[], final: Final): unknown {
    const n = args.length - 1 + (final !== MISSING ? 1 : 0);
    if (n < 1) this.fail(`wrong number of args for ${name}: want at least 1 got 0`);
    let v: unknown;
    for (let i = 1; i <= n; i++) {
      v = i < args.length ? this.evalArgValue(dot, args[i]) : final;
      const t = truth(v);
      if (name === 'and' ? !t : t) return v;
    }
    return v;
  }
}

/** Go type of template data as eKuiper passes it (rows are `map[string]interface {}`, lists of rows typed too). */
function dataType(v: unknown): string {
  if (Array.isArray(v) && v.length > 0 && v.every(isMap)) return '[]map[string]interface {}';
  return goType(v);
}

function goKind(k: ParamKind): string {
  return k === 'int' ? 'int' : k === 'float' ? 'float64' : k;
}

/** What an action prints: `<no value>` for a missing (or nil) result, else Go's `%v`. */
function printValue(v: unknown): string {
  if (v === undefined || v === null) return '<no value>';
  if (typeof v === 'string') return v;
  return formatV(v);
}
