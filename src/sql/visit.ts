/**
 * The one visitor and transformer of expression trees: every pass that walks an expression (the parser's depth
 * check, the binder's checks and alias expansion, the planner's collection of calls and columns, worker placement)
 * goes through these, so all of them agree on what a sub-expression is. A node kind added to `Expr` fails to compile
 * here until it is handled ({@link unhandledKind}).
 *
 * The key of `meta(k)` / `mqtt(topic)` is not a sub-expression: it names a metadata key (a column path written the
 * way a column is), never a value to evaluate, so no pass looks into it as one.
 */
import type { Expr } from './ast.js';

/** For the `default` of an exhaustive `switch (e.kind)`: a kind left out makes `e` not `never`, a compile error. */
export function unhandledKind(e: never): never {
  throw new Error(`unhandled expression kind ${(e as { kind?: unknown }).kind as string}`);
}

/** The direct sub-expressions of `e` in written order, OVER clauses and REPLACE items included. */
export function childExprs(e: Expr): Expr[] {
  switch (e.kind) {
    case 'field':
    case 'integer':
    case 'float':
    case 'string':
    case 'boolean':
    case 'timeUnit':
    case 'meta':
      return [];
    case 'wildcard':
      return e.replace.map((r) => r.expr);
    case 'binary':
      return [e.left, e.right];
    case 'navigate':
      return [e.object];
    case 'index':
      return [e.array, e.index];
    case 'slice': {
      const out: Expr[] = [e.array];
      if (e.start) out.push(e.start);
      if (e.end) out.push(e.end);
      return out;
    }
    case 'in':
      return [e.value, ...(e.list ?? []), ...(e.array ? [e.array] : [])];
    case 'between':
      return [e.value, e.low, e.high];
    case 'like':
      return [e.value, e.pattern];
    case 'case': {
      const out: Expr[] = e.value ? [e.value] : [];
      for (const w of e.whens) out.push(w.when, w.then);
      if (e.elseExpr) out.push(e.elseExpr);
      return out;
    }
    case 'call': {
      const out: Expr[] = [...e.args];
      if (e.over) {
        out.push(...e.over.partitionBy, ...e.over.orderBy.map((s) => s.expr));
        if (e.over.when) out.push(e.over.when);
      }
      return out;
    }
    case 'paren':
      return [e.expr];
    default:
      return unhandledKind(e);
  }
}

/** Calls `f` on each direct sub-expression of `e` ({@link childExprs}). */
export function forEachChild(e: Expr, f: (c: Expr) => void): void {
  for (const c of childExprs(e)) f(c);
}

/** Calls `visit` on `e` and every sub-expression, pre-order. */
export function walk(e: Expr, visit: (x: Expr) => void): void {
  visit(e);
  for (const c of childExprs(e)) walk(c, visit);
}

/** Rebuilds `e` with `f` applied to every direct sub-expression (the same ones {@link childExprs} lists). */
export function mapChildren(e: Expr, f: (c: Expr) => Expr): Expr {
  switch (e.kind) {
    case 'field':
    case 'integer':
    case 'float':
    case 'string':
    case 'boolean':
    case 'timeUnit':
    case 'meta':
      return e;
    case 'wildcard':
      return e.replace.length ? { ...e, replace: e.replace.map((r) => ({ name: r.name, expr: f(r.expr) })) } : e;
    case 'binary':
      return { ...e, left: f(e.left), right: f(e.right) };
    case 'navigate':
      return { ...e, object: f(e.object) };
    case 'index':
      return { ...e, array: f(e.array), index: f(e.index) };
    case 'slice':
      return { ...e, array: f(e.array), start: e.start && f(e.start), end: e.end && f(e.end) };
    case 'in':
      return { ...e, value: f(e.value), list: e.list && e.list.map(f), array: e.array && f(e.array) };
    case 'between':
      return { ...e, value: f(e.value), low: f(e.low), high: f(e.high) };
    case 'like':
      return { ...e, value: f(e.value), pattern: f(e.pattern) };
    case 'case':
      return {
        ...e,
        value: e.value && f(e.value),
        whens: e.whens.map((w) => ({ when: f(w.when), then: f(w.then) })),
        elseExpr: e.elseExpr && f(e.elseExpr),
      };
    case 'call':
      return {
        ...e,
        args: e.args.map(f),
        over: e.over && {
          partitionBy: e.over.partitionBy.map(f),
          orderBy: e.over.orderBy.map((s) => ({ expr: f(s.expr), ascending: s.ascending })),
          when: e.over.when && f(e.over.when),
        },
      };
    case 'paren':
      return { ...e, expr: f(e.expr) };
    default:
      return unhandledKind(e);
  }
}
