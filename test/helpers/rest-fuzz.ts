/**
 * Random REST requests for the fuzz test (test/api/fuzz.test.ts) and the fuzz benchmark (bench/fuzz.ts): every route
 * of the server, with its own methods and others, odd ids, query strings, and bodies of random JSON, garbage, huge and
 * deeply nested values, or plausible objects with the fields the routes read.
 */
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';

export interface RouteSpec {
  /** e.g. `/rules/:id/status` */
  path: string;
  methods: string[];
}

export interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

/** Every route of a fastify instance, read from its route tree (`printRoutes`). */
export function routesOf(http: FastifyInstance): RouteSpec[] {
  const out: RouteSpec[] = [];
  const stack: string[] = [];
  for (const line of http.printRoutes({ commonPrefix: false }).split('\n')) {
    const at = line.indexOf('── ');
    if (at < 0) continue;
    const depth = Math.floor(at / 4);
    const m = /^(.*?)(?: \(([A-Z, ]+)\))?$/.exec(line.slice(at + 3));
    if (!m) continue;
    const path = (depth === 0 ? '' : stack[depth - 1]) + m[1];
    stack[depth] = path;
    stack.length = depth + 1;
    if (m[2]) out.push({ path, methods: m[2].split(',').map((s) => s.trim()) });
  }
  return out;
}

const ALL_METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'];

/** Path segments that have tripped routers and file helpers. */
const ODD_IDS = [
  '..',
  '.',
  '%2e%2e',
  '%00',
  '%',
  '%zz',
  'a%2Fb',
  '%2F',
  '%20',
  '*',
  ':id',
  '__proto__',
  'constructor',
  'a.b',
  '-',
  '%C3%BC',
  '%F0%9F%98%80',
];

/** SQL a route may run: plausible statements and broken ones. */
const SQL = [
  'CREATE STREAM fz () WITH (DATASOURCE="fz", TYPE="memory")',
  'CREATE STREAM fz (a BIGINT, b STRUCT(c FLOAT)) WITH (DATASOURCE="fz", FORMAT="json", TYPE="memory", SHARED="true")',
  'CREATE TABLE fzt () WITH (DATASOURCE="fzt", TYPE="memory", KIND="lookup", KEY="id")',
  'SELECT * FROM fz',
  'SELECT a, count(*) FROM fz GROUP BY a, TumblingWindow(ss, 1)',
  'SELECT * FROM fz INNER JOIN fzt ON fz.a = fzt.id',
  'DROP STREAM fz',
  'SHOW STREAMS',
  'SELECT',
  'CREATE STREAM',
  `SELECT ${'('.repeat(300)}1${')'.repeat(300)} FROM fz`,
  `SELECT ${'a + '.repeat(2000)}1 FROM fz`,
  "SELECT 'unterminated FROM fz",
];

/** File references: never a network address that could stall a test. */
const FILES = [
  'file:///etc/passwd',
  'file:///nonexistent/x.zip',
  'ftp://x/y',
  '',
  'file://',
  'http://127.0.0.1:1/x.zip',
  'not a url',
];

/** `fc.json()` texts and other values a decoder may meet, as JSON text. */
function jsonValue(depth: number): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.jsonValue({ maxDepth: depth }) },
    { weight: 1, arbitrary: fc.constantFrom(null, true, 0, -1, 1e308, 2 ** 63, '', 'x'.repeat(300), [], {}) },
  );
}

function plausibleObject(ids: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  const id = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ids) },
    { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
    { weight: 1, arbitrary: fc.constantFrom(...ODD_IDS) },
  );
  const any = jsonValue(3);
  const action = fc.oneof(
    fc.constantFrom(
      { nop: {} },
      { log: {} },
      { memory: { topic: 'fz/out' } },
      { rest: { url: 'http://127.0.0.1:1/x' } },
      { file: { path: '/etc/fz' } },
    ),
    fc.dictionary(fc.constantFrom('nop', 'log', 'memory', 'mqtt', 'rest', 'file', 'nosuch'), any, { maxKeys: 2 }),
  );
  return fc.record(
    {
      id,
      name: id,
      sql: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...SQL) }, { weight: 1, arbitrary: any }),
      actions: fc.oneof(fc.array(action, { maxLength: 3 }), any),
      options: fc.oneof(
        fc.dictionary(
          fc.constantFrom('qos', 'bufferLength', 'isEventTime', 'restartStrategy', 'cron', 'duration', 'sendError'),
          any,
        ),
        any,
      ),
      triggered: fc.oneof(fc.boolean(), any),
      file: fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...FILES) }, { weight: 1, arbitrary: any }),
      content: fc.oneof(
        any.map((v) => JSON.stringify(v) ?? ''),
        any,
        fc.constantFrom(
          '{"streams":{"fz":"CREATE STREAM fz () WITH (TYPE=\\"memory\\")"}}',
          'syntax = "proto3"; message M {}',
        ),
      ),
      script: fc.oneof(fc.constantFrom('function fz(a) { return a; }', 'while(true){}', 'throw 1'), any),
      isAgg: any,
      tags: fc.oneof(fc.array(fc.string({ maxLength: 5 })), any),
      keys: any,
      endpoint: fc.oneof(fc.constantFrom('/fz', '', 'no-slash'), any),
      type: any,
      logLevel: fc.oneof(fc.constantFrom('debug', 'info', 'warn', 'nosuch'), any),
      timezone: fc.oneof(fc.constantFrom('UTC', 'Nowhere/City', ''), any),
      functions: any,
      shellParas: any,
      graph: any,
      ruleId: id,
    },
    { requiredKeys: [] },
  );
}

/** Bodies a route accepts, so that requests also create, change and delete things. */
function validObject(ids: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  const name = fc.oneof(fc.constantFrom(...ids), fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/));
  return fc.oneof(
    name.map((n) => ({ sql: `CREATE STREAM ${n} () WITH (DATASOURCE="fz/${n}", TYPE="memory")` })),
    name.map((n) => ({
      sql: `CREATE TABLE ${n} () WITH (DATASOURCE="fz/${n}", TYPE="memory", KIND="lookup", KEY="id")`,
    })),
    fc.tuple(name, fc.constantFrom(...SQL.slice(3, 6))).map(([n, sql]) => ({ id: n, sql, actions: [{ nop: {} }] })),
    name.map((n) => ({ id: n, script: `function ${n}(a) { return a; }` })),
    name.map((n) => ({ name: n, content: 'syntax = "proto3"; message M { string a = 1; }' })),
    name.map((n) => ({ name: n, content: 'x' })),
    fc.array(fc.stringMatching(/^[a-z]{1,4}$/), { maxLength: 3 }).map((tags) => ({ tags })),
    fc.constant({ server: 'tcp://127.0.0.1:1883' }),
  );
}

function body(ids: readonly string[], hugeMax: number): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 4, arbitrary: validObject(ids).map((o) => JSON.stringify(o)) },
    { weight: 6, arbitrary: plausibleObject(ids).map((o) => JSON.stringify(o)) },
    { weight: 2, arbitrary: jsonValue(6).map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 2, arbitrary: fc.string({ maxLength: 200 }) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')) },
    // deeply nested: at, around and far over the nesting limit
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.integer({ min: 1, max: 20000 }), fc.constantFrom('[', '{"a":', '{"sql":'))
        .map(([n, open]) => open.repeat(n) + '1' + (open === '[' ? ']' : '}').repeat(n)),
    },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 20000 }).map((n) => '['.repeat(n)) },
    // huge values
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.integer({ min: Math.min(10_000, hugeMax), max: hugeMax }),
          fc.constantFrom('sql', 'id', 'content', 'name'),
        )
        .map(([n, k]) => JSON.stringify({ [k]: 'x'.repeat(n) })),
    },
    {
      weight: 1,
      arbitrary: fc
        .integer({ min: 1000, max: 50_000 })
        .map((n) => JSON.stringify({ actions: Array.from({ length: n }, () => ({ nop: {} })) })),
    },
  );
}

/** A body `path` accepts, naming `name`; undefined for routes without one. */
function fittingBody(path: string, name: string): string | undefined {
  const body = (o: unknown) => JSON.stringify(o);
  if (path === '/streams' || path === '/streams/:id')
    return body({ sql: `CREATE STREAM ${name} () WITH (DATASOURCE="fz/${name}", TYPE="memory")` });
  if (path === '/tables' || path === '/tables/:id')
    return body({
      sql: `CREATE TABLE ${name} () WITH (DATASOURCE="fz/${name}", TYPE="memory", KIND="lookup", KEY="id")`,
    });
  if (path === '/rules' || path === '/rules/:id' || path === '/rules/validate')
    return body({ id: name, sql: 'SELECT * FROM fz', actions: [{ nop: {} }] });
  if (path === '/udf/javascript' || path === '/udf/javascript/:id')
    return body({ id: name, script: `function ${name}(a) { return a; }` });
  if (path.startsWith('/schemas/')) return body({ name, content: 'syntax = "proto3"; message M { string a = 1; }' });
  if (path === '/config/uploads') return body({ name, content: 'x' });
  if (path.endsWith('/confKeys/:confKey')) return body({ server: 'tcp://127.0.0.1:1883' });
  if (path === '/rules/:id/tags') return body({ tags: [name] });
  if (path === '/ruleset/import')
    return body({ content: JSON.stringify({ streams: { [name]: `CREATE STREAM ${name} () WITH (TYPE="memory")` } }) });
  return undefined;
}

const QUERIES = [
  '',
  '?partial=1',
  '?partial=true',
  '?kind=lookup',
  '?kind=scan',
  '?keys=a,b',
  '?stop=0',
  '?a=%zz',
  '?=',
  '?&&',
  '?rules=x',
];

/**
 * One random request against `routes`; `ids` are names the requests should often hit (seeded resources); `hugeMax`
 * bounds the length of the huge string values.
 */
/** Routes never fuzzed: `/stop` ends the server it is asked from the loopback interface (as `stop=1` does an import). */
const NEVER_SENT = new Set(['/stop']);

export function requestArbitrary(
  allRoutes: readonly RouteSpec[],
  ids: readonly string[],
  hugeMax = 2_000_000,
): fc.Arbitrary<FuzzRequest> {
  const routes = allRoutes.filter((r) => !NEVER_SENT.has(r.path));
  const param = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...ids) },
    { weight: 2, arbitrary: fc.constantFrom(...ODD_IDS) },
    { weight: 2, arbitrary: fc.string({ maxLength: 16 }).map((s) => encodeURIComponent(s)) },
    { weight: 1, arbitrary: fc.integer({ min: 200, max: 400 }).map((n) => 'x'.repeat(n)) },
  );
  return (
    fc
      .tuple(
        fc.constantFrom(...routes),
        fc.oneof(
          { weight: 6, arbitrary: fc.constant(-1) },
          { weight: 1, arbitrary: fc.integer({ min: 0, max: ALL_METHODS.length - 1 }) },
        ),
        fc.integer({ min: 0, max: 7 }),
        fc.array(param, { minLength: 4, maxLength: 4 }),
        fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...QUERIES) },
          {
            weight: 1,
            arbitrary: fc.string({ maxLength: 20 }).map((s) => `?${encodeURIComponent(s)}=${encodeURIComponent(s)}`),
          },
        ),
        body(ids, hugeMax),
        fc.constantFrom(
          'application/json',
          'text/plain',
          'application/octet-stream',
          'multipart/form-data; boundary=zz',
          '',
        ),
        fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
        fc.oneof(fc.constantFrom(...ids), fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/)),
        fc.integer({ min: 0, max: 9 }),
      )
      .map(([route, m, pick, params, query, generated, contentType, trailingSlash, name, fitting]) => {
        const method = m < 0 ? route.methods[pick % route.methods.length] : ALL_METHODS[m];
        // often the body the route expects, so that requests also create, change and delete things
        const fit = fitting < 4 ? fittingBody(route.path, name) : undefined;
        const b = fit ?? generated;
        let i = 0;
        const path =
          route.path.replace(/:[A-Za-z_]+/g, () => params[i++ % params.length]) +
          (trailingSlash && route.path !== '/' ? '/' : '');
        // `stop=1` makes an import end the process: never sent
        const headers: Record<string, string> = contentType ? { 'content-type': contentType } : {};
        return {
          method,
          url: path + query,
          headers,
          body: method === 'GET' || method === 'HEAD' ? (b && b.length < 1000 ? b : undefined) : b,
        };
      })
      // inject() resolves dot segments before routing (a real client's `/rules/../stop` is redirected first): a path
      // that resolves to a route never sent is not sent either
      .filter((r) => !NEVER_SENT.has(resolvedPath(r.url)))
  );
}

/** The path of `url` with its dot segments resolved, as inject() routes it. */
function resolvedPath(url: string): string {
  try {
    return new URL(url, 'http://fuzz').pathname.replace(/\/+$/, '') || '/';
  } catch {
    return url;
  }
}
