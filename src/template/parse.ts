/**
 * Parser of Go text/template source (docs/runtime.md §3.4): delimiters `{{ }}`, trim markers, comments, pipelines,
 * control structures and `define`/`template`/`block`. Produces a tree the executor walks.
 */

import { unquoteGo } from '../core/gostring.js';

export class TemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TemplateError';
  }
}

// ------------------------------------------------------------------------------------------------ tree

export type ArgNode =
  | { t: 'field'; pos: number; idents: string[] }
  | { t: 'var'; pos: number; name: string; idents: string[] }
  | { t: 'dot'; pos: number }
  | { t: 'nil'; pos: number }
  | { t: 'bool'; pos: number; value: boolean }
  | { t: 'num'; pos: number; text: string; isInt: boolean; int?: bigint; float: number }
  | { t: 'str'; pos: number; value: string; text: string }
  | { t: 'ident'; pos: number; name: string }
  | { t: 'chain'; pos: number; node: ArgNode; idents: string[] }
  | { t: 'pipe'; pos: number; pipe: Pipe };

export interface Command {
  pos: number;
  args: ArgNode[];
}

export interface Pipe {
  pos: number;
  decl: string[];
  isAssign: boolean;
  cmds: Command[];
}

export type Node =
  | { t: 'text'; text: string }
  | { t: 'action'; pos: number; pipe: Pipe }
  | { t: 'if' | 'with' | 'range'; pos: number; pipe: Pipe; list: Node[]; elseList: Node[] | null }
  | { t: 'template'; pos: number; name: string; pipe: Pipe | null }
  | { t: 'break' | 'continue'; pos: number };

// ------------------------------------------------------------------------------------------------ lexer

type ItemType =
  | 'text'
  | 'left'
  | 'right'
  | 'space'
  | 'field'
  | 'var'
  | 'ident'
  | 'keyword'
  | 'str'
  | 'rawstr'
  | 'char'
  | 'num'
  | 'bool'
  | 'nil'
  | 'dot'
  | 'pipe'
  | 'lparen'
  | 'rparen'
  | 'declare'
  | 'assign'
  | 'comma'
  | 'eof';

interface Item {
  typ: ItemType;
  pos: number;
  val: string;
}

const KEYWORDS = new Set(['if', 'else', 'end', 'range', 'with', 'define', 'template', 'block', 'break', 'continue']);

function isSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\r' || c === '\n';
}
function isAlnum(c: string): boolean {
  return c === '_' || /[\p{L}\p{Nd}]/u.test(c);
}

class Lexer {
  private items: Item[] = [];
  private pos = 0;
  private parenDepth = 0;
  constructor(
    private readonly src: string,
    private readonly lineOf: (pos: number) => number,
  ) {}

  fail(msg: string, pos: number): never {
    throw new TemplateError(`${this.lineOf(pos)}: ${msg}`);
  }

  run(): Item[] {
    const src = this.src;
    while (this.pos <= src.length) {
      const open = src.indexOf('{{', this.pos);
      if (open < 0) {
        if (this.pos < src.length) this.items.push({ typ: 'text', pos: this.pos, val: src.slice(this.pos) });
        break;
      }
      let text = src.slice(this.pos, open);
      let p = open + 2;
      const trimLeft = src[p] === '-' && isSpace(src[p + 1] ?? '');
      if (trimLeft) {
        text = text.replace(/[ \t\r\n]+$/, '');
        p += 2;
      }
      if (text.length) this.items.push({ typ: 'text', pos: this.pos, val: text });
      // comment
      let q = p;
      while (trimLeft && isSpace(src[q] ?? '')) q++;
      if (src.startsWith('/*', trimLeft ? q : p)) {
        const start = trimLeft ? q : p;
        const end = src.indexOf('*/', start + 2);
        if (end < 0) this.fail('unclosed comment', start);
        let r = end + 2;
        let trimRight = false;
        if (
          src.startsWith(' -}}', r) ||
          src.startsWith('\t-}}', r) ||
          src.startsWith('\n-}}', r) ||
          src.startsWith('\r-}}', r)
        ) {
          trimRight = true;
          r += 4;
        } else if (src.startsWith('}}', r)) {
          r += 2;
        } else this.fail('comment ends before closing delimiter', start);
        if (trimRight) while (r < src.length && isSpace(src[r])) r++;
        this.pos = r;
        continue;
      }
      this.items.push({ typ: 'left', pos: open, val: '{{' });
      this.pos = p;
      this.lexAction();
    }
    this.items.push({ typ: 'eof', pos: src.length, val: '' });
    return this.items;
  }

  private atRightDelim(): { trim: boolean; len: number } | null {
    const src = this.src;
    if (isSpace(src[this.pos] ?? '') && src[this.pos + 1] === '-' && src.startsWith('}}', this.pos + 2))
      return { trim: true, len: 4 };
    if (src.startsWith('}}', this.pos)) return { trim: false, len: 2 };
    return null;
  }

  private lexAction(): void {
    const src = this.src;
    this.parenDepth = 0;
    for (;;) {
      const rd = this.atRightDelim();
      if (rd) {
        if (this.parenDepth) this.fail('unclosed left paren', this.pos);
        this.items.push({ typ: 'right', pos: this.pos, val: '}}' });
        this.pos += rd.len;
        if (rd.trim) while (this.pos < src.length && isSpace(src[this.pos])) this.pos++;
        return;
      }
      if (this.pos >= src.length) this.fail('unclosed action', this.pos);
      const c = src[this.pos];
      const start = this.pos;
      if (c === '\n' || c === '\r') {
        // Go allows newlines inside actions since 1.16; treat them as space
      }
      if (isSpace(c)) {
        while (this.pos < src.length && isSpace(src[this.pos]) && !this.atRightDelim()) this.pos++;
        this.items.push({ typ: 'space', pos: start, val: ' ' });
        continue;
      }
      if (c === '=') {
        this.pos++;
        this.items.push({ typ: 'assign', pos: start, val: '=' });
        continue;
      }
      if (c === ':') {
        if (src[this.pos + 1] !== '=') this.fail('expected :=', start);
        this.pos += 2;
        this.items.push({ typ: 'declare', pos: start, val: ':=' });
        continue;
      }
      if (c === '|') {
        this.pos++;
        this.items.push({ typ: 'pipe', pos: start, val: '|' });
        continue;
      }
      if (c === ',') {
        this.pos++;
        this.items.push({ typ: 'comma', pos: start, val: ',' });
        continue;
      }
      if (c === '"') {
        this.pos++;
        for (;;) {
          const d = src[this.pos];
          if (d === undefined || d === '\n') this.fail('unterminated quoted string', start);
          this.pos++;
          if (d === '\\') {
            if (src[this.pos] === undefined || src[this.pos] === '\n') this.fail('unterminated quoted string', start);
            this.pos++;
          } else if (d === '"') break;
        }
        this.items.push({ typ: 'str', pos: start, val: src.slice(start, this.pos) });
        continue;
      }
      if (c === '`') {
        const end = src.indexOf('`', this.pos + 1);
        if (end < 0) this.fail('unterminated raw quoted string', start);
        this.pos = end + 1;
        this.items.push({ typ: 'rawstr', pos: start, val: src.slice(start, this.pos) });
        continue;
      }
      if (c === "'") {
        this.pos++;
        for (;;) {
          const d = src[this.pos];
          if (d === undefined || d === '\n') this.fail('unterminated character constant', start);
          this.pos++;
          if (d === '\\') this.pos++;
          else if (d === "'") break;
        }
        this.items.push({ typ: 'char', pos: start, val: src.slice(start, this.pos) });
        continue;
      }
      if (c === '$') {
        this.pos++;
        while (this.pos < src.length && isAlnum(src[this.pos])) this.pos++;
        this.items.push({ typ: 'var', pos: start, val: src.slice(start, this.pos) });
        continue;
      }
      if (c === '.') {
        const n = src[this.pos + 1];
        if (n !== undefined && n >= '0' && n <= '9') {
          this.lexNumber();
          continue;
        }
        this.pos++;
        if (this.pos < src.length && isAlnum(src[this.pos])) {
          while (this.pos < src.length && isAlnum(src[this.pos])) this.pos++;
          this.items.push({ typ: 'field', pos: start, val: src.slice(start, this.pos) });
        } else this.items.push({ typ: 'dot', pos: start, val: '.' });
        continue;
      }
      if (c === '+' || c === '-' || (c >= '0' && c <= '9')) {
        this.lexNumber();
        continue;
      }
      if (isAlnum(c)) {
        while (this.pos < src.length && isAlnum(src[this.pos])) this.pos++;
        const word = src.slice(start, this.pos);
        const next = src[this.pos];
        if (
          next !== undefined &&
          !(
            isSpace(next) ||
            next === '.' ||
            next === ',' ||
            next === '|' ||
            next === ':' ||
            next === ')' ||
            next === '(' ||
            next === '=' ||
            next === '}' ||
            next === '-'
          )
        )
          this.fail(`bad character ${JSON.stringify(next)}`, this.pos);
        if (KEYWORDS.has(word)) this.items.push({ typ: 'keyword', pos: start, val: word });
        else if (word === 'true' || word === 'false') this.items.push({ typ: 'bool', pos: start, val: word });
        else if (word === 'nil') this.items.push({ typ: 'nil', pos: start, val: word });
        else this.items.push({ typ: 'ident', pos: start, val: word });
        continue;
      }
      if (c === '(') {
        this.parenDepth++;
        this.pos++;
        this.items.push({ typ: 'lparen', pos: start, val: '(' });
        continue;
      }
      if (c === ')') {
        this.parenDepth--;
        if (this.parenDepth < 0) this.fail('unexpected right paren', start);
        this.pos++;
        this.items.push({ typ: 'rparen', pos: start, val: ')' });
        continue;
      }
      this.fail(`unrecognized character in action: ${JSON.stringify(c)}`, start);
    }
  }

  private lexNumber(): void {
    const src = this.src;
    const start = this.pos;
    const m =
      /^[+-]?(0[xX][0-9a-fA-F_]*(\.[0-9a-fA-F_]*)?([pP][+-]?[0-9_]+)?|0[bB][01_]+|0[oO][0-7_]+|[0-9_]*\.?[0-9_]*([eE][+-]?[0-9_]+)?)i?/.exec(
        src.slice(start),
      );
    const text = m ? m[0] : '';
    this.pos = start + text.length;
    const next = src[this.pos];
    if (!text || text === '+' || text === '-' || (next !== undefined && isAlnum(next)))
      this.fail(`bad number syntax: "${src.slice(start, this.pos + 1)}"`, start);
    this.items.push({ typ: 'num', pos: start, val: text });
  }
}

// ------------------------------------------------------------------------------------------------ parser

/** A double-quoted Go literal, quotes included. */
function unquote(text: string, fail: (m: string) => never): string {
  return unquoteGo(text.slice(1, -1)) ?? fail('invalid syntax');
}

function parseNumber(text: string, fail: (m: string) => never): ArgNode & { t: 'num' } {
  if (text.endsWith('i')) fail(`complex numbers are not supported: ${text}`);
  const clean = text.replace(/_/g, '');
  const neg = clean.startsWith('-');
  const body = clean.replace(/^[+-]/, '');
  let int: bigint | undefined;
  let float: number;
  if (/^0[xX][0-9a-fA-F]+$/.test(body) || /^0[bB][01]+$/.test(body) || /^0[oO][0-7]+$/.test(body)) {
    int = BigInt(body.slice(0, 2).toLowerCase() + body.slice(2));
    float = Number(int);
  } else if (/^0[0-7]+$/.test(body)) {
    int = BigInt('0o' + body.slice(1));
    float = Number(int);
  } else if (/^[0-9]+$/.test(body)) {
    int = BigInt(body);
    float = Number(body);
  } else if (/^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/.test(body)) {
    float = Number(body);
    // a float text with an integral value is also an int constant (Go's number node), but prints as float
    if (Number.isInteger(float) && Math.abs(float) < 2 ** 63) int = BigInt(float);
  } else fail(`illegal number syntax: "${text}"`);
  if (neg) {
    float = -float;
    if (int !== undefined) int = -int;
  }
  const isFloatText = !/^0[xXbBoO]/.test(body) && /[.eE]/.test(body);
  return { t: 'num', pos: 0, text, isInt: int !== undefined && !isFloatText, int, float };
}

export interface ParsedTemplates {
  /** template name → body */
  trees: Map<string, Node[]>;
}

export class Parser {
  private items: Item[] = [];
  private i = 0;
  private vars: string[] = ['$'];
  private readonly lineStarts: number[] = [];
  private readonly trees = new Map<string, Node[]>();

  constructor(
    private readonly name: string,
    private readonly src: string,
  ) {
    this.lineStarts.push(0);
    for (let k = 0; k < src.length; k++) if (src[k] === '\n') this.lineStarts.push(k + 1);
  }

  lineOf = (pos: number): number => {
    let lo = 0;
    let hi = this.lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.lineStarts[mid] <= pos) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };

  location(pos: number): string {
    const line = this.lineOf(pos);
    return `${this.name}:${line}:${pos - this.lineStarts[line - 1]}`;
  }

  parse(): ParsedTemplates {
    try {
      this.items = new Lexer(this.src, this.lineOf).run();
      const root: Node[] = [];
      for (;;) {
        const it = this.peek();
        if (it.typ === 'eof') break;
        if (it.typ === 'left' && this.peekNonSpaceAt(1).val === 'define' && this.peekNonSpaceAt(1).typ === 'keyword') {
          this.parseDefine();
          continue;
        }
        const n = this.textOrAction();
        if (n.kind === 'end' || n.kind === 'else') this.fail(`unexpected {{${n.kind}}}`, n.pos);
        root.push(n.node!);
      }
      if (!this.trees.has(this.name) || root.some((n) => n.t !== 'text' || n.text.trim() !== ''))
        this.trees.set(this.name, root);
      return { trees: this.trees };
    } catch (e) {
      if (e instanceof TemplateError && !e.message.startsWith('template: '))
        throw new TemplateError(`template: ${this.name}:${e.message}`);
      throw e;
    }
  }

  private fail(msg: string, pos: number): never {
    throw new TemplateError(`${this.lineOf(pos)}: ${msg}`);
  }

  private peek(): Item {
    return this.items[this.i];
  }
  private next(): Item {
    return this.items[this.i++];
  }
  private peekNonSpaceAt(offset: number): Item {
    let k = this.i + offset;
    while (this.items[k]?.typ === 'space') k++;
    return this.items[k];
  }
  private nextNonSpace(): Item {
    let it = this.next();
    while (it.typ === 'space') it = this.next();
    return it;
  }
  private peekNonSpace(): Item {
    const save = this.i;
    const it = this.nextNonSpace();
    this.i = save;
    return it;
  }
  private expect(typ: ItemType, context: string): Item {
    const it = this.nextNonSpace();
    if (it.typ !== typ) this.unexpected(it, context);
    return it;
  }
  private unexpected(it: Item, context: string): never {
    if (it.typ === 'eof') this.fail(`unexpected EOF`, it.pos);
    const desc = it.typ === 'right' ? '"}}"' : it.typ === 'left' ? '"{{"' : `"${it.val}"`;
    this.fail(`unexpected ${desc} in ${context}`, it.pos);
  }

  private parseDefine(): void {
    this.next(); // left
    this.nextNonSpace(); // define
    const nameItem = this.nextNonSpace();
    if (nameItem.typ !== 'str' && nameItem.typ !== 'rawstr') this.unexpected(nameItem, 'define clause');
    const name = this.stringValue(nameItem);
    this.expect('right', 'define clause');
    const saved = this.vars;
    this.vars = ['$'];
    const { list, end } = this.itemList();
    if (end !== 'end') this.fail('unexpected {{else}} in define clause', this.peek().pos);
    this.vars = saved;
    this.trees.set(name, list);
  }

  private stringValue(it: Item): string {
    if (it.typ === 'rawstr') return it.val.slice(1, -1);
    return unquote(it.val, (m) => this.fail(m, it.pos));
  }

  /** Parses until {{end}} or {{else}}; returns which ended it. */
  private itemList(): { list: Node[]; end: 'end' | 'else'; elsePos: number } {
    const list: Node[] = [];
    for (;;) {
      if (this.peek().typ === 'eof') this.fail('unexpected EOF', this.peek().pos);
      const r = this.textOrAction();
      if (r.kind === 'end') return { list, end: 'end', elsePos: r.pos };
      if (r.kind === 'else') return { list, end: 'else', elsePos: r.pos };
      list.push(r.node!);
    }
  }

  private textOrAction(): { kind: 'node' | 'end' | 'else'; node?: Node; pos: number } {
    const it = this.next();
    if (it.typ === 'text') return { kind: 'node', node: { t: 'text', text: it.val }, pos: it.pos };
    if (it.typ !== 'left') this.unexpected(it, 'input');
    const kw = this.peekNonSpace();
    if (kw.typ === 'keyword') {
      this.nextNonSpace();
      switch (kw.val) {
        case 'end':
          this.expect('right', 'end');
          return { kind: 'end', pos: kw.pos };
        case 'else': {
          // `else if` / `else with` chain: leave the keyword for the caller
          const nx = this.peekNonSpace();
          if (nx.typ === 'keyword' && (nx.val === 'if' || nx.val === 'with')) return { kind: 'else', pos: kw.pos };
          this.expect('right', 'else');
          return { kind: 'else', pos: kw.pos };
        }
        case 'if':
        case 'with':
        case 'range':
          return { kind: 'node', node: this.control(kw.val, kw.pos), pos: kw.pos };
        case 'template':
        case 'block':
          return { kind: 'node', node: this.templateControl(kw.val, kw.pos), pos: kw.pos };
        case 'break':
        case 'continue':
          if (!this.rangeDepth) this.fail(`{{${kw.val}}} outside {{range}}`, kw.pos);
          this.expect('right', kw.val);
          return { kind: 'node', node: { t: kw.val, pos: kw.pos }, pos: kw.pos };
        case 'define':
          this.fail('unexpected define: nested template definitions are not allowed', kw.pos);
      }
    }
    const pipe = this.pipeline('command', 'right');
    return { kind: 'node', node: { t: 'action', pos: it.pos, pipe }, pos: it.pos };
  }

  private rangeDepth = 0;

  private control(kind: 'if' | 'with' | 'range', pos: number): Node {
    const mark = this.vars.length;
    const pipe = this.pipeline(kind, 'right');
    if (kind === 'range') this.rangeDepth++;
    const { list, end } = this.itemList();
    if (kind === 'range') this.rangeDepth--;
    let elseList: Node[] | null = null;
    if (end === 'else') {
      const nx = this.peekNonSpace();
      if ((kind === 'if' || kind === 'with') && nx.typ === 'keyword' && nx.val === kind) {
        // `{{else if …}}` is `{{else}}{{if …}}…{{end}}{{end}}` sharing the outer {{end}}
        this.nextNonSpace();
        const inner = this.control(kind, nx.pos);
        elseList = [inner];
      } else if (nx.typ === 'keyword' && (nx.val === 'if' || nx.val === 'with')) {
        this.nextNonSpace();
        elseList = [this.control(nx.val as 'if' | 'with', nx.pos)];
      } else {
        const r = this.itemList();
        if (r.end === 'else') this.fail(`expected end; found {{else}}`, r.elsePos);
        elseList = r.list;
      }
    }
    this.vars.length = mark;
    return { t: kind, pos, pipe, list, elseList };
  }

  private templateControl(kind: 'template' | 'block', pos: number): Node {
    const nameItem = this.nextNonSpace();
    if (nameItem.typ !== 'str' && nameItem.typ !== 'rawstr') this.unexpected(nameItem, `${kind} clause`);
    const name = this.stringValue(nameItem);
    let pipe: Pipe | null = null;
    if (this.peekNonSpace().typ !== 'right') pipe = this.pipeline(kind, 'right');
    else this.nextNonSpace();
    if (kind === 'block') {
      const saved = this.vars;
      this.vars = ['$'];
      const { list, end } = this.itemList();
      if (end !== 'end') this.fail('unexpected {{else}} in block clause', pos);
      this.vars = saved;
      this.trees.set(name, list);
    }
    return { t: 'template', pos, name, pipe };
  }

  /** Parses a pipeline up to the closing `}}` (end = 'right') or `)` (end = 'rparen'), consuming it. */
  private pipeline(context: string, end: 'right' | 'rparen'): Pipe {
    const pos = this.peekNonSpace().pos;
    const pipe: Pipe = { pos, decl: [], isAssign: false, cmds: [] };
    // declarations
    const first = this.peekNonSpace();
    if (first.typ === 'var') {
      const save = this.i;
      this.nextNonSpace();
      const after = this.peekNonSpace();
      if (after.typ === 'declare' || after.typ === 'assign') {
        this.nextNonSpace();
        pipe.decl.push(first.val);
        pipe.isAssign = after.typ === 'assign';
        if (after.typ === 'declare') this.vars.push(first.val);
        else if (!this.vars.includes(first.val)) this.fail(`undefined variable "${first.val}"`, first.pos);
      } else if (after.typ === 'comma' && context === 'range') {
        this.nextNonSpace();
        const second = this.nextNonSpace();
        if (second.typ !== 'var') this.fail(`range can only initialize variables`, second.pos);
        const op = this.nextNonSpace();
        if (op.typ !== 'declare' && op.typ !== 'assign') this.unexpected(op, 'range');
        pipe.decl.push(first.val, second.val);
        pipe.isAssign = op.typ === 'assign';
        if (op.typ === 'declare') this.vars.push(first.val, second.val);
      } else this.i = save;
    }
    for (;;) {
      const it = this.peekNonSpace();
      if (it.typ === end) {
        this.nextNonSpace();
        if (pipe.cmds.length === 0) this.fail(`missing value for ${context}`, it.pos);
        break;
      }
      if (it.typ === 'eof' || (end === 'rparen' && it.typ === 'right') || (end === 'right' && it.typ === 'rparen'))
        this.unexpected(this.nextNonSpace(), context);
      pipe.cmds.push(this.command(context));
    }
    for (let k = 1; k < pipe.cmds.length; k++) {
      const a0 = pipe.cmds[k].args[0];
      if (a0.t === 'bool' || a0.t === 'dot' || a0.t === 'nil' || a0.t === 'num' || a0.t === 'str')
        this.fail(`non executable command in pipeline stage ${k + 1}`, a0.pos);
    }
    return pipe;
  }

  private command(context: string): Command {
    const pos = this.peekNonSpace().pos;
    const cmd: Command = { pos, args: [] };
    for (;;) {
      while (this.peek().typ === 'space') this.next();
      const operand = this.operand();
      if (operand) cmd.args.push(operand);
      const it = this.peek();
      if (it.typ === 'space') {
        this.next();
        const nx = this.peek();
        if (nx.typ === 'right' || nx.typ === 'rparen') break;
        if (nx.typ === 'pipe') {
          this.next();
          break;
        }
        continue;
      }
      if (it.typ === 'right' || it.typ === 'rparen') break;
      if (it.typ === 'pipe') {
        this.next();
        break;
      }
      this.unexpected(this.next(), 'operand');
    }
    if (cmd.args.length === 0) this.fail(`empty command`, pos);
    void context;
    return cmd;
  }

  private operand(): ArgNode | null {
    let node = this.term();
    if (!node) return null;
    if (this.peek().typ === 'field') {
      const idents: string[] = [];
      while (this.peek().typ === 'field') idents.push(this.next().val.slice(1));
      switch (node.t) {
        case 'field':
          node = { t: 'field', pos: node.pos, idents: [...node.idents, ...idents] };
          break;
        case 'var':
          node = { t: 'var', pos: node.pos, name: node.name, idents: [...node.idents, ...idents] };
          break;
        case 'bool':
        case 'str':
        case 'num':
        case 'nil':
        case 'dot':
          this.fail(`unexpected . after term "${nodeString(node)}"`, node.pos);
          break;
        default:
          node = { t: 'chain', pos: node.pos, node, idents };
      }
    }
    return node;
  }

  private term(): ArgNode | null {
    const it = this.peek();
    switch (it.typ) {
      case 'ident':
        this.next();
        return { t: 'ident', pos: it.pos, name: it.val };
      case 'dot':
        this.next();
        return { t: 'dot', pos: it.pos };
      case 'nil':
        this.next();
        return { t: 'nil', pos: it.pos };
      case 'var': {
        this.next();
        if (!this.vars.includes(it.val)) this.fail(`undefined variable "${it.val}"`, it.pos);
        return { t: 'var', pos: it.pos, name: it.val, idents: [] };
      }
      case 'field':
        this.next();
        return { t: 'field', pos: it.pos, idents: [it.val.slice(1)] };
      case 'bool':
        this.next();
        return { t: 'bool', pos: it.pos, value: it.val === 'true' };
      case 'char': {
        this.next();
        const s =
          it.val === "'\"'"
            ? '"'
            : unquote('"' + it.val.slice(1, -1).replace(/\\'/g, "'") + '"', (m) => this.fail(m, it.pos));
        const cp = s.codePointAt(0);
        if (cp === undefined || [...s].length !== 1) this.fail(`malformed character constant: ${it.val}`, it.pos);
        return { t: 'num', pos: it.pos, text: it.val, isInt: true, int: BigInt(cp), float: cp };
      }
      case 'num': {
        this.next();
        const n = parseNumber(it.val, (m) => this.fail(m, it.pos));
        n.pos = it.pos;
        return n;
      }
      case 'str':
      case 'rawstr':
        this.next();
        return { t: 'str', pos: it.pos, value: this.stringValue(it), text: it.val };
      case 'lparen': {
        this.next();
        const pipe = this.pipeline('parenthesized pipeline', 'rparen');
        return { t: 'pipe', pos: it.pos, pipe };
      }
      default:
        return null;
    }
  }
}

export function nodeString(n: ArgNode): string {
  switch (n.t) {
    case 'field':
      return '.' + n.idents.join('.');
    case 'var':
      return [n.name, ...n.idents].join('.');
    case 'dot':
      return '.';
    case 'nil':
      return 'nil';
    case 'bool':
      return String(n.value);
    case 'num':
      return n.text;
    case 'str':
      return n.text;
    case 'ident':
      return n.name;
    case 'chain':
      return (n.node.t === 'pipe' ? '(' + nodeString(n.node) + ')' : nodeString(n.node)) + '.' + n.idents.join('.');
    case 'pipe':
      return pipeString(n.pipe);
  }
}

export function pipeString(p: Pipe): string {
  let s = '';
  if (p.decl.length) s = p.decl.join(', ') + (p.isAssign ? ' = ' : ' := ');
  return (
    s +
    p.cmds
      .map((c) => c.args.map((a) => (a.t === 'pipe' ? '(' + nodeString(a) + ')' : nodeString(a))).join(' '))
      .join(' | ')
  );
}
