/**
 * JavaScript functions over HTTP on a real server: `/udf/javascript` CRUD with eKuiper's texts and every bad input,
 * rules calling scalar and aggregate scripts over the memory connector (errors and time-outs become error records
 * and the rule keeps running), persistence across a restart, and the bundle's `scripts` section.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.js';
import type { ValueObject } from '../../src/values/index.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

type J = Record<string, any>;

const F2C = {
  id: 'f2c',
  description: 'fahrenheit to celsius',
  script: 'function f2c(f) { return (f - 32) * 5 / 9; }',
  isAgg: false,
};

async function until<T>(fn: () => T | Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last = await fn();
  while (!ok(last)) {
    if (Date.now() > end)
      assert.fail(
        `timed out waiting for ${what}; last: ${JSON.stringify(last, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}`,
      );
    await new Promise((r) => setTimeout(r, 20));
    last = await fn();
  }
  return last;
}

/** A memory stream `name` (topic `<name>/in`) and a collector of what rules publish on `<name>/out`. */
async function memoryStream(
  s: TestServer,
  name: string,
  fields = 'a BIGINT',
): Promise<{ publish(row: ValueObject): void; out: ValueObject[]; close(): void }> {
  const r = await s.req('POST', '/streams', {
    sql: `CREATE STREAM ${name} (${fields}) WITH (DATASOURCE="${name}/in", FORMAT="json", TYPE="memory")`,
  });
  assert.equal(r.status, 201, r.text);
  const out: ValueObject[] = [];
  const close = s.app.connectors.memory.subscribe(`${name}/out`, (m) => out.push(m.row));
  return { publish: (row) => s.app.connectors.memory.publish({ topic: `${name}/in`, row }), out, close };
}

async function createRule(s: TestServer, id: string, sql: string, stream: string): Promise<void> {
  const r = await s.req('POST', '/rules', { id, sql, actions: [{ memory: { topic: `${stream}/out` } }] });
  assert.equal(r.status, 201, r.text);
  await until(
    async () => ((await s.req('GET', `/rules/${id}/status`)).json() as J).status,
    (x) => x === 'running',
    `rule ${id} to run`,
  );
}

function errorBody(r: { status: number; json(): unknown }): J {
  assert.equal(r.status === 400 || r.status === 404, true, `status ${r.status}`);
  return r.json() as J;
}

test('create, list, describe, update, delete with eKuiper texts; missing functions are 404 code 1002', async () => {
  const s = await startTestServer();
  try {
    let r = await s.req('GET', '/udf/javascript');
    assert.equal(r.status, 200);
    assert.deepEqual(r.json(), []);
    r = await s.req('POST', '/udf/javascript', F2C);
    assert.equal(r.status, 201);
    assert.equal(r.text, 'javascript function f2c is created');
    r = await s.req('POST', '/udf/javascript', {
      id: 'area',
      description: 'calculate area',
      script: 'function area(x, y) { return x * y; }',
      isAgg: false,
    });
    assert.equal(r.status, 201);
    assert.deepEqual((await s.req('GET', '/udf/javascript')).json(), ['f2c', 'area']);
    r = await s.req('GET', '/udf/javascript/f2c');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(r.json(), F2C);

    r = await s.req('PUT', '/udf/javascript/f2c', {
      ...F2C,
      description: 'updated',
      script: 'function f2c(f) { return Math.round((f - 32) / 1.8); }',
    });
    assert.equal(r.status, 200);
    assert.equal(r.text, 'javascript function f2c is updated');
    assert.equal(((await s.req('GET', '/udf/javascript/f2c')).json() as J).description, 'updated');
    r = await s.req('PUT', '/udf/javascript/newone', { id: 'newone', script: 'function newone() { return 1; }' });
    assert.equal(r.status, 200, 'PUT creates a missing function');
    assert.deepEqual((await s.req('GET', '/udf/javascript/newone')).json(), {
      id: 'newone',
      description: '',
      script: 'function newone() { return 1; }',
      isAgg: false,
    });

    r = await s.req('PUT', '/udf/javascript/other', { id: 'newone', script: 'function newone() { return 2; }' });
    assert.equal(
      r.text,
      'javascript function newone is updated',
      'as in eKuiper, the body names the function a PUT writes',
    );
    assert.equal(
      ((await s.req('GET', '/udf/javascript/newone')).json() as J).script,
      'function newone() { return 2; }',
    );
    assert.equal((await s.req('GET', '/udf/javascript/other')).status, 404);

    r = await s.req('DELETE', '/udf/javascript/newone');
    assert.equal(r.status, 200);
    assert.equal(r.text, 'javascript function newone is deleted');
    r = await s.req('GET', '/udf/javascript/newone');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json(), { error: 1002, message: 'describe javascript function newone error: not found' });
    r = await s.req('DELETE', '/udf/javascript/newone');
    assert.equal(r.status, 404);
    assert.deepEqual(r.json(), {
      error: 1002,
      message: 'delete javascript function newone error: newone is not found',
    });
    assert.deepEqual((await s.req('GET', '/udf/javascript')).json(), ['f2c', 'area']);
  } finally {
    await s.dispose();
  }
});

test('bad bodies and bad scripts answer 400 with the error object and store nothing', async () => {
  const s = await startTestServer();
  try {
    const create = 'javascript function create command error: ';
    const cases: Array<[unknown, string | RegExp]> = [
      ['{"id": "x", ', /^Invalid body: Error decoding the new javascript function json: .+/],
      ['', 'Invalid body: Error decoding the new javascript function json: EOF'],
      [
        '[1, 2]',
        'Invalid body: Error decoding the new javascript function json: json: cannot unmarshal array into Go value of type js.Script',
      ],
      [
        { id: 42, script: 'function x() {}' },
        'Invalid body: Error decoding the new javascript function json: json: cannot unmarshal number into Go struct field Script.id of type string',
      ],
      [
        { id: 'x', script: 'function x() {}', isAgg: 'no' },
        'Invalid body: Error decoding the new javascript function json: json: cannot unmarshal string into Go struct field Script.isAgg of type bool',
      ],
      [{ description: 'no id', script: 'function x() {}' }, `${create}cannot find function "" in script`],
      [
        { id: 'x', script: 'throw new Error("broken at load")' },
        `${create}failed to interprete script: Error: broken at load`,
      ],
      [
        { id: 'x', script: 'function x( {' },
        /^javascript function create command error: failed to interprete script: SyntaxError: /,
      ],
      [{ id: 'x', script: 'function y() { return 1; }' }, `${create}cannot find function "x" in script`],
      [{ id: 'x' }, `${create}cannot find function "x" in script`],
      [
        { id: 'x', script: 'async function x() { return 1; }' },
        `${create}failed to interprete script: async functions, await and import are not supported in javascript functions`,
      ],
      [
        { id: 'abs', script: 'function abs(v) { return v < 0 ? -v : v; }' },
        `${create}function abs is a built-in function and cannot be redefined by a javascript function`,
      ],
      [
        { id: 'count', script: 'function count(xs) { return xs.length; }', isAgg: true },
        `${create}function count is a built-in function and cannot be redefined by a javascript function`,
      ],
    ];
    for (const [body, message] of cases) {
      const r = await s.req('POST', '/udf/javascript', body);
      const j = errorBody(r);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(j.error, 1000);
      if (typeof message === 'string') assert.equal(j.message, message, JSON.stringify(body));
      else assert.match(j.message, message);
      assert.deepEqual(Object.keys(j), ['error', 'message']);
    }
    // a script that never finishes loading is cut off (default limit 1 s)
    let r = await s.req('POST', '/udf/javascript', { id: 'x', script: 'while (true) {} function x() {}' });
    assert.deepEqual(r.json(), {
      error: 1000,
      message: `${create}failed to interprete script: script execution timed out after 1000ms`,
    });
    assert.deepEqual((await s.req('GET', '/udf/javascript')).json(), []);

    assert.equal((await s.req('POST', '/udf/javascript', F2C)).status, 201);
    r = await s.req('POST', '/udf/javascript', { ...F2C, description: 'again' });
    assert.deepEqual(r.json(), { error: 1000, message: `${create}Item f2c already exists` });
    r = await s.req('PUT', '/udf/javascript/f2c', 'not json');
    assert.match(errorBody(r).message, /^Invalid body: Error decoding the javascript function json: /);
    r = await s.req('PUT', '/udf/javascript/f2c', { ...F2C, script: 'function other() {}' });
    assert.deepEqual(r.json(), {
      error: 1000,
      message: 'javascript function update command error: cannot find function "f2c" in script',
    });
    r = await s.req('PUT', '/udf/javascript/round', { id: 'round', script: 'function round(x) { return x; }' });
    assert.deepEqual(r.json(), {
      error: 1000,
      message:
        'javascript function update command error: function round is a built-in function and cannot be redefined by a javascript function',
    });
    assert.deepEqual((await s.req('GET', '/udf/javascript/f2c')).json(), F2C, 'failed updates change nothing');
    assert.deepEqual((await s.req('GET', '/udf/javascript')).json(), ['f2c']);
    const ok = await s.req('GET', '/rules');
    assert.equal(ok.status, 200, 'the server is still answering');
  } finally {
    await s.dispose();
  }
});

test('rules call scalar and aggregate scripts; each call site has its own engine', async () => {
  const s = await startTestServer();
  const st = uid('s');
  const io = await memoryStream(s, st, 'a BIGINT, t FLOAT, name STRING');
  try {
    for (const body of [
      F2C,
      {
        id: 'greet',
        description: '',
        script: 'function greet(n, o) { return { text: "hi " + n, tags: [n.length, o.x] }; }',
        isAgg: false,
      },
      {
        id: 'spread',
        description: '',
        script: 'function spread(xs) { return Math.max.apply(null, xs) - Math.min.apply(null, xs); }',
        isAgg: true,
      },
      {
        id: 'wavg',
        description: '',
        script:
          'function wavg(vs, ws) { var s = 0, w = 0; for (var i = 0; i < vs.length; i++) { s += vs[i] * ws[i]; w += ws[i]; } return s / w; }',
        isAgg: true,
      },
      {
        id: 'tick',
        description: 'a counter',
        script: 'var n = 0; function tick() { n += 1; return n; }',
        isAgg: false,
      },
    ]) {
      assert.equal((await s.req('POST', '/udf/javascript', body)).status, 201);
    }
    await createRule(
      s,
      uid('scalar'),
      `SELECT f2c(t) AS c, greet(name, object_construct("x", a)) AS g, tick() AS t1, tick() AS t2 FROM ${st} WHERE a > 0`,
      st,
    );
    io.publish({ a: 1, t: 212, name: 'ann' });
    io.publish({ a: 2, t: 100, name: 'bo' });
    await until(
      () => io.out.length,
      (n) => n >= 2,
      'two scalar rows',
    );
    assert.deepEqual(io.out.slice(0, 2), [
      { c: 100n, g: { text: 'hi ann', tags: [3n, 1n] }, t1: 1n, t2: 1n },
      { c: ((100 - 32) * 5) / 9, g: { text: 'hi bo', tags: [2n, 2n] }, t1: 2n, t2: 2n },
    ]);
    io.out.length = 0;

    await s.req('DELETE', `/rules/${((await s.req('GET', '/rules')).json() as J[])[0].id}`);
    await createRule(
      s,
      uid('agg'),
      `SELECT spread(a) AS spread, wavg(t, a) AS avg, count(*) AS n FROM ${st} GROUP BY COUNTWINDOW(3)`,
      st,
    );
    for (const [a, t] of [
      [1, 10],
      [5, 20],
      [2, 40],
    ])
      io.publish({ a, t, name: 'x' });
    await until(
      () => io.out.length,
      (n) => n >= 1,
      'one window',
    );
    assert.deepEqual(io.out[0], { spread: 4n, avg: (10 + 100 + 80) / 8, n: 3n });
  } finally {
    io.close();
    await s.dispose();
  }
});

test('a script that throws yields error records and the rule keeps running; one that loops stops its rule, saying so', async () => {
  const s = await startTestServer();
  const st = uid('s');
  const io = await memoryStream(s, st);
  try {
    const script =
      'function risky(a) { if (a === 1) throw new Error("one is not allowed"); if (a === 2) while (true) {} if (a === 3) return 0 / 0; return a * 10; }';
    assert.equal((await s.req('POST', '/udf/javascript', { id: 'risky', script })).status, 201);
    const rule = uid('risky');
    await createRule(s, rule, `SELECT risky(a) AS r FROM ${st}`, st);
    for (const a of [1, 5, 3, 7]) io.publish({ a });
    await until(
      () => io.out.length,
      (n) => n >= 4,
      'four outputs',
    );
    assert.match(String(io.out[0].error), /call func risky error: Error: one is not allowed$/);
    assert.deepEqual(io.out[1], { r: 50n });
    assert.match(String(io.out[2].error), /call func risky error: result is NaN$/);
    assert.deepEqual(io.out[3], { r: 70n });
    // a rule on a worker sends its counters every 100 ms: the rows may arrive before them
    let status = (await s.req('GET', `/rules/${rule}/status`)).json() as J;
    for (const end = Date.now() + 15_000; status.op_2_project_0_exceptions_total !== 2 && Date.now() < end;) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await s.req('GET', `/rules/${rule}/status`)).json() as J;
    }
    assert.equal(status.status, 'running');
    assert.equal(status.op_2_project_0_exceptions_total, 2, JSON.stringify(status));
    // a call past the time limit would hold the rule's thread that long for every record: the rule stops
    io.publish({ a: 2 });
    const end = Date.now() + 30_000;
    while (status.status === 'running' && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await s.req('GET', `/rules/${rule}/status`)).json() as J;
    }
    assert.equal(
      status.message,
      'Stopped: javascript function risky ran past its time limit of 1000 ms, so the rule was stopped.',
    );
  } finally {
    io.close();
    await s.dispose();
  }
});

test('deleting a script: running rules keep it, new rules fail to plan with "function not found"', async () => {
  const s = await startTestServer();
  const st = uid('s');
  const io = await memoryStream(s, st);
  try {
    const early = await s.req('POST', '/rules', {
      id: uid('early'),
      sql: `SELECT plus1(a) FROM ${st}`,
      actions: [{ nop: {} }],
    });
    assert.deepEqual(
      early.json(),
      { error: 2101, message: 'function plus1 not found' },
      'a rule cannot use a script before it exists',
    );
    assert.equal(
      (await s.req('POST', '/udf/javascript', { id: 'plus1', script: 'function plus1(a) { return a + 1; }' })).status,
      201,
    );
    await createRule(s, uid('keeps'), `SELECT plus1(a) AS b FROM ${st}`, st);
    assert.equal((await s.req('DELETE', '/udf/javascript/plus1')).status, 200);
    io.publish({ a: 41 });
    await until(
      () => io.out.length,
      (n) => n >= 1,
      'output after the delete',
    );
    assert.deepEqual(io.out[0], { b: 42n });
    const r = await s.req('POST', '/rules', {
      id: uid('late'),
      sql: `SELECT plus1(a) FROM ${st}`,
      actions: [{ nop: {} }],
    });
    assert.equal(r.status, 400);
    assert.deepEqual(r.json(), { error: 2101, message: 'function plus1 not found' });
    const v = await s.req('POST', '/rules/validate', {
      id: 'v',
      sql: `SELECT plus1(a) FROM ${st}`,
      actions: [{ nop: {} }],
    });
    assert.equal(v.status, 422);
  } finally {
    io.close();
    await s.dispose();
  }
});

test('scripts survive a restart and are loaded before the rules that use them are restored', async () => {
  const first = await startTestServer();
  const st = uid('s');
  const rule = uid('persist');
  try {
    const r = await first.req('POST', '/streams', {
      sql: `CREATE STREAM ${st} (a BIGINT) WITH (DATASOURCE="${st}/in", FORMAT="json", TYPE="memory")`,
    });
    assert.equal(r.status, 201);
    assert.equal(
      (
        await first.req('POST', '/udf/javascript', {
          id: 'triple',
          description: 'x3',
          script: 'function triple(a) { return a * 3; }',
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await first.req('POST', '/udf/javascript', {
          id: 'gsum',
          script: 'function gsum(xs) { return xs.reduce(function (s, x) { return s + x; }, 0); }',
          isAgg: true,
        })
      ).status,
      201,
    );
    await createRule(first, rule, `SELECT triple(a) AS t, gsum(a) AS s FROM ${st} GROUP BY COUNTWINDOW(2)`, st);
  } finally {
    await first.stop();
  }
  const again = await startTestServer({ home: first.homeDir });
  const out: ValueObject[] = [];
  const close = again.app.connectors.memory.subscribe(`${st}/out`, (m) => out.push(m.row));
  try {
    assert.deepEqual((await again.req('GET', '/udf/javascript')).json(), ['triple', 'gsum']);
    assert.deepEqual((await again.req('GET', '/udf/javascript/triple')).json(), {
      id: 'triple',
      description: 'x3',
      script: 'function triple(a) { return a * 3; }',
      isAgg: false,
    });
    await until(
      async () => ((await again.req('GET', `/rules/${rule}/status`)).json() as J).status,
      (x) => x === 'running',
      'the restored rule',
    );
    again.app.connectors.memory.publish({ topic: `${st}/in`, row: { a: 4 } });
    again.app.connectors.memory.publish({ topic: `${st}/in`, row: { a: 6 } });
    await until(
      () => out.length,
      (n) => n >= 1,
      'output of the restored rule',
    );
    assert.deepEqual(out[0], { t: 12n, s: 10n }, 'a scalar in a window query reads the first row of the group');
  } finally {
    close();
    await again.dispose();
  }
});

test('data bundle: scripts are exported, imported before the rules that use them, and bad items are reported', async () => {
  const a = await startTestServer();
  const b = await startTestServer();
  const st = uid('s');
  const rule = uid('bundled');
  try {
    await memoryStream(a, st).then((io) => io.close());
    assert.equal(
      (
        await a.req('POST', '/udf/javascript', {
          id: 'halve',
          description: 'half',
          script: 'function halve(x) { return x / 2; }',
        })
      ).status,
      201,
    );
    await createRule(a, rule, `SELECT halve(a) AS h FROM ${st}`, st);
    const exported = (await a.req('GET', '/data/export')).json() as J;
    assert.deepEqual(exported.scripts, {
      halve: '{"id":"halve","description":"half","script":"function halve(x) { return x / 2; }","isAgg":false}',
    });

    const content = JSON.stringify(exported);
    const r = await b.req('POST', '/data/import', { content });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual((await b.req('GET', '/udf/javascript/halve')).json(), {
      id: 'halve',
      description: 'half',
      script: 'function halve(x) { return x / 2; }',
      isAgg: false,
    });
    await until(
      async () => ((await b.req('GET', `/rules/${rule}/status`)).json() as J).status,
      (x) => x === 'running',
      'the imported rule',
    );
    const out: ValueObject[] = [];
    const close = b.app.connectors.memory.subscribe(`${st}/out`, (m) => out.push(m.row));
    b.app.connectors.memory.publish({ topic: `${st}/in`, row: { a: 9 } });
    await until(
      () => out.length,
      (n) => n >= 1,
      'output of the imported rule',
    );
    close();
    assert.deepEqual(out[0], { h: 4.5 });
    assert.deepEqual(
      ((await b.req('GET', '/data/export')).json() as J).scripts,
      exported.scripts,
      'the round trip keeps the items',
    );

    // a full import with a bad script item changes nothing and names the item
    const bad = {
      ...exported,
      scripts: {
        ...exported.scripts,
        broken: '{"id":"broken","script":"function nope() {}"}',
        mism: '{"id":"other","script":"function other() {}"}',
      },
    };
    const refused = await b.req('POST', '/data/import', { content: JSON.stringify(bad) });
    assert.equal(refused.status, 400);
    const doc = JSON.parse((refused.json() as J).message) as J;
    assert.deepEqual(doc.scripts, {
      broken: 'cannot find function "broken" in script',
      mism: 'the script id other does not match the key mism',
    });
    assert.deepEqual((await b.req('GET', '/udf/javascript')).json(), ['halve']);

    // a partial import upserts scripts item by item
    const partial = await b.req('POST', '/data/import?partial=1', {
      content: JSON.stringify({
        scripts: {
          halve: '{"script":"function halve(x) { return x / 4; }"}',
          neg: '{"script":"function neg(x) { return -x; }"}',
          broken: '{"script":"function halve() {}"}',
        },
      }),
    });
    assert.equal(partial.status, 400);
    assert.deepEqual((JSON.parse((partial.json() as J).message) as J).scripts, {
      broken: 'cannot find function "broken" in script',
    });
    assert.deepEqual((await b.req('GET', '/udf/javascript')).json(), ['halve', 'neg']);
    assert.equal(
      ((await b.req('GET', '/udf/javascript/halve')).json() as J).script,
      'function halve(x) { return x / 4; }',
    );

    // a full import replaces every script
    const replaced = await b.req('POST', '/data/import', {
      content: JSON.stringify({
        scripts: { only: '{"id":"only","script":"function only() { return 1; }","isAgg":false}' },
      }),
    });
    assert.equal(replaced.status, 200, replaced.text);
    assert.deepEqual((await b.req('GET', '/udf/javascript')).json(), ['only']);
  } finally {
    await a.dispose();
    await b.dispose();
  }
});
