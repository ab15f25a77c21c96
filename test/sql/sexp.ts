/** Fully bracketed rendering of an expression tree, so tests can state precedence and shape exactly. */
import type { Expr } from '../../src/sql/ast.js';

export function sexp(e: Expr): string {
  switch (e.kind) {
    case 'field':
      return e.stream === null ? e.name : `${e.stream}.${e.name}`;
    case 'wildcard': {
      let s = e.stream === null ? '*' : `${e.stream}.*`;
      if (e.except.length) s += ` except[${e.except.join(' ')}]`;
      if (e.replace.length) s += ` replace[${e.replace.map((r) => `${sexp(r.expr)} as ${r.name}`).join(', ')}]`;
      return e.except.length || e.replace.length ? `(${s})` : s;
    }
    case 'integer':
      return `${e.value}`;
    case 'float':
      return `${e.value}f`;
    case 'string':
      return JSON.stringify(e.value);
    case 'boolean':
      return String(e.value);
    case 'timeUnit':
      return `#${e.unit}`;
    case 'binary':
      return `(${e.op} ${sexp(e.left)} ${sexp(e.right)})`;
    case 'navigate':
      return `(${e.dot ? '.' : '->'} ${sexp(e.object)} ${e.member})`;
    case 'index':
      return `([] ${sexp(e.array)} ${sexp(e.index)})`;
    case 'slice':
      return e.colon
        ? `([:] ${sexp(e.array)} ${e.start ? sexp(e.start) : '_'} ${e.end ? sexp(e.end) : '_'})`
        : `([] ${sexp(e.array)})`;
    case 'in':
      return `(${e.negated ? 'notin' : 'in'} ${sexp(e.value)} ${
        e.list ? `[${e.list.map(sexp).join(' ')}]` : sexp(e.array as Expr)
      })`;
    case 'between':
      return `(${e.negated ? 'notbetween' : 'between'} ${sexp(e.value)} ${sexp(e.low)} ${sexp(e.high)})`;
    case 'like':
      return `(${e.negated ? 'notlike' : 'like'} ${sexp(e.value)} ${sexp(e.pattern)})`;
    case 'case': {
      const parts = [e.value ? sexp(e.value) : '_'];
      for (const w of e.whens) parts.push(`(when ${sexp(w.when)} ${sexp(w.then)})`);
      if (e.elseExpr) parts.push(`(else ${sexp(e.elseExpr)})`);
      return `(case ${parts.join(' ')})`;
    }
    case 'call': {
      let s = `(${e.name}${e.args.map((a) => ' ' + sexp(a)).join('')})`;
      if (e.over) {
        const o: string[] = [];
        if (e.over.partitionBy.length) o.push(`partition[${e.over.partitionBy.map(sexp).join(' ')}]`);
        if (e.over.orderBy.length) {
          o.push(`order[${e.over.orderBy.map((x) => sexp(x.expr) + (x.ascending ? '' : ' desc')).join(' ')}]`);
        }
        if (e.over.when) o.push(`when ${sexp(e.over.when)}`);
        s += ` over(${o.join(' ')})`;
      }
      return s;
    }
    case 'meta':
      return `(${e.func} ${sexp(e.arg)})`;
    case 'paren':
      return `(paren ${sexp(e.expr)})`;
  }
}
