/**
 * Rule tracing over REST (src/api/traces.ts, docs/runtime.md §1.11): a record through an MQTT source, its decoder, a
 * filter, a projection and a sink is one trace listing every node with what it received and emitted, in process and
 * on worker threads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { publisher } from '../connectors/helpers.js';
import { waitFor } from '../helpers/process.js';

type J = Record<string, unknown>;
interface Span {
  name: string;
  traceID: string;
  spanID: string;
  parentSpanID?: string;
  attribute: { input?: unknown; output?: unknown[]; error?: string };
  startTime: number;
  endTime: number;
  ruleID: string;
  ChildSpan?: Span[];
}

/** The chain of spans from the root, following the first child. */
function chain(root: Span): Span[] {
  const out: Span[] = [];
  for (let s: Span | undefined = root; s; s = s.ChildSpan?.[0]) out.push(s);
  return out;
}

async function traceOf(s: TestServer, id: string, want: (spans: Span[]) => boolean): Promise<Span[]> {
  let found: Span[] = [];
  await waitFor(
    async () => {
      const ids = (await s.req('GET', `/trace/rule/${id}`)).json() as string[];
      for (const t of ids) {
        const r = await s.req('GET', `/trace/${t}`);
        if (r.status !== 200) continue;
        const spans = chain(r.json() as Span);
        if (want(spans)) {
          found = spans;
          return true;
        }
      }
      return false;
    },
    30_000,
    `a trace of rule ${id}`,
    100,
  );
  return found;
}

// on the main thread (`none`) and on a worker thread
for (const workers of ['none', '1']) {
  test(`a traced record lists every node with its values (workers: ${workers})`, async () => {
    const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: workers } });
    const pub = await publisher();
    try {
      const topic = `eddy/trace/${workers}/${Date.now()}`;
      const st = `tr${workers}`;
      const create = await s.req('POST', '/streams', {
        sql: `CREATE STREAM ${st} () WITH (DATASOURCE="${topic}", FORMAT="json")`,
      });
      assert.equal(create.status, 201, create.text);
      const r = await s.req('POST', '/rules', {
        id: 'traced',
        sql: `SELECT a, b * 2 AS c FROM ${st} WHERE a > 1`,
        actions: [{ nop: {} }],
      });
      assert.equal(r.status, 201, r.text);
      // nothing is traced before tracing starts
      await pub.publishAsync(topic, JSON.stringify({ a: 7, b: 1 }), { qos: 1 });
      assert.deepEqual((await s.req('GET', '/trace/rule/traced')).json(), []);

      const start = await s.req('POST', '/rules/traced/trace/start', { strategy: 'always' });
      assert.equal(start.status, 200, start.text);
      // published until traced: the rule may still be subscribing, the worker sends its spans with its metrics
      let publishing = true;
      const feeding = (async () => {
        while (publishing) {
          await pub.publishAsync(topic, JSON.stringify({ a: 5, b: 3 }), { qos: 1 });
          await pub.publishAsync(topic, JSON.stringify({ a: 0, b: 4 }), { qos: 1 });
          await new Promise((res) => setTimeout(res, 200));
        }
      })();
      let passed: Span[];
      let dropped: Span[];
      try {
        passed = await traceOf(s, 'traced', (spans) => spans.at(-1)?.name === 'sink_nop_0');
        dropped = await traceOf(s, 'traced', (spans) => spans.at(-1)?.name === 'op_3_filter');
      } finally {
        publishing = false;
        await feeding;
      }
      assert.deepEqual(
        passed.map((x) => x.name),
        ['source_' + st, 'op_2_decoder', 'op_3_filter', 'op_4_project', 'sink_nop_0'],
      );
      const [source, decoder, filter, project, sink] = passed;
      assert.equal(source.attribute.input, '{"a":5,"b":3}', 'the source received the payload');
      assert.deepEqual(decoder.attribute.output, [{ a: 5, b: 3 }]);
      assert.deepEqual(filter.attribute.input, { a: 5, b: 3 });
      assert.deepEqual(filter.attribute.output, [{ a: 5, b: 3 }]);
      assert.deepEqual(project.attribute.output, [[{ a: 5, c: 6 }]]);
      assert.deepEqual(sink.attribute.input, [{ a: 5, c: 6 }]);
      for (const [i, x] of passed.entries()) {
        assert.equal(x.traceID, source.traceID);
        assert.equal(x.ruleID, 'traced');
        assert.match(x.spanID, /^[0-9a-f]{16}$/);
        assert.ok(x.startTime > 0 && x.endTime >= x.startTime, `${x.name} has its times`);
        if (i > 0) assert.equal(x.parentSpanID, passed[i - 1].spanID);
      }
      assert.match(source.traceID, /^[0-9a-f]{32}$/);
      // a record the filter drops: its trace ends there, with no output
      assert.equal(dropped.at(-1)?.attribute.output, undefined);
      assert.deepEqual(dropped.at(-1)?.attribute.input, { a: 0, b: 4 });

      // stopped: no more traces
      assert.equal((await s.req('POST', '/rules/traced/trace/stop')).status, 200);
      await new Promise((res) => setTimeout(res, 500));
      const before = ((await s.req('GET', '/trace/rule/traced')).json() as string[]).length;
      for (let i = 0; i < 5; i++) await pub.publishAsync(topic, JSON.stringify({ a: 9, b: 9 }), { qos: 1 });
      await new Promise((res) => setTimeout(res, 700));
      assert.equal(((await s.req('GET', '/trace/rule/traced')).json() as string[]).length, before);
    } finally {
      await pub.endAsync();
      await s.dispose();
    }
  });
}

test('trace routes refuse what they cannot do', async () => {
  const s = await startTestServer();
  try {
    const bad = await s.req('POST', '/rules/nosuch/trace/start', { strategy: 'always' });
    assert.equal(bad.status, 404);
    assert.equal((bad.json() as J).error, 1002);
    assert.equal((await s.req('GET', '/trace/rule/nosuch')).status, 404);
    assert.equal((await s.req('GET', '/trace/0123456789abcdef0123456789abcdef')).status, 404);
    await s.req('POST', '/streams', { sql: 'CREATE STREAM tq () WITH (DATASOURCE="t/q", TYPE="memory")' });
    assert.equal(
      (await s.req('POST', '/rules', { id: 'q', sql: 'SELECT * FROM tq', actions: [{ nop: {} }] })).status,
      201,
    );
    const strategy = await s.req('POST', '/rules/q/trace/start', { strategy: 'sometimes' });
    assert.equal(strategy.status, 400);
    assert.match(String((strategy.json() as J).message), /strategy must be "always" or "head"/);
    assert.equal((await s.req('POST', '/rules/q/trace/start')).status, 200, 'an empty body traces always');
  } finally {
    await s.dispose();
  }
});

test('head traces only the records that arrive with a trace context, continuing it (httppush traceparent)', async () => {
  const s = await startTestServer();
  try {
    await s.req('POST', '/streams', { sql: 'CREATE STREAM th () WITH (TYPE="httppush", DATASOURCE="/trace/head")' });
    assert.equal(
      (await s.req('POST', '/rules', { id: 'head', sql: 'SELECT * FROM th', actions: [{ nop: {} }] })).status,
      201,
    );
    assert.equal((await s.req('POST', '/rules/head/trace/start', { strategy: 'head' })).status, 200);
    await waitFor(() => s.app.connectors.dataServer.port !== undefined, 10_000, 'the data server');
    const url = `http://127.0.0.1:${s.app.connectors.dataServer.port}/trace/head`;
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const post = (headers: Record<string, string>) =>
      fetch(url, { method: 'POST', body: JSON.stringify({ a: 1 }), headers }).then((r) => r.status);
    assert.equal(await post({}), 200);
    assert.equal(await post({ traceparent: `00-${traceId}-00f067aa0ba902b7-01` }), 200);
    const spans = await traceOf(s, 'head', (x) => x.at(-1)?.name === 'sink_nop_0');
    assert.equal(spans[0].traceID, traceId, 'the trace continues the caller’s');
    assert.equal(spans[0].parentSpanID, '00f067aa0ba902b7');
    assert.deepEqual(
      (await s.req('GET', '/trace/rule/head')).json(),
      [traceId],
      'the record without a context is not traced',
    );
  } finally {
    await s.dispose();
  }
});
