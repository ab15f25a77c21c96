/**
 * Prometheus metrics (docs/rest-api.md §16.8) on a real server with data through Mosquitto: the exposition text is
 * parsed back and compared with the rule status; per-rule series go away with the rule.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { connectAsync } from 'mqtt';
import { startTestServer, type TestServer } from '../helpers/server.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
}

/** Parses the Prometheus text format (the subset prom-client writes). */
function parse(text: string): Exposition {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t) {
      types.set(t[1], t[2]);
      continue;
    }
    if (line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m, `not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: m[3] === '+Inf' ? Infinity : Number(m[3]) });
  }
  return { types, samples };
}

function find(e: Exposition, name: string, labels: Record<string, string>): Sample[] {
  return e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

async function scrape(url: string): Promise<{ status: number; type: string; exp: Exposition; text: string }> {
  const res = await fetch(url);
  const text = await res.text();
  return {
    status: res.status,
    type: res.headers.get('content-type') ?? '',
    exp: res.status === 200 ? parse(text) : { types: new Map(), samples: [] },
    text,
  };
}

/** The label names of every sample line in the order printed; Go's client sorts them, `le`/`quantile` last. */
function assertLabelsSorted(text: string): void {
  let checked = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || !line.includes('{')) continue;
    const names = [...line.slice(line.indexOf('{')).matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)].map(
      (m) => m[1],
    );
    const trailing = names.filter((n) => n === 'le' || n === 'quantile');
    const sorted = [...names.filter((n) => n !== 'le' && n !== 'quantile').sort(), ...trailing];
    assert.deepEqual(names, sorted, line);
    checked++;
  }
  assert.ok(checked > 0);
}

async function poll<T>(fn: () => Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
  const end = Date.now() + 20_000;
  let last = await fn();
  while (!ok(last)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await fn();
  }
  return last;
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

async function runScenario(s: TestServer, metricsUrl: string): Promise<void> {
  const topic = `eddy/prom/${uid('in')}`;
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: uid('eddy_prom'), reconnectPeriod: 0 });
  try {
    const st = uid('demo');
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM ${st} (a BIGINT) WITH (DATASOURCE="${topic}")` })).status,
      201,
    );
    assert.equal(
      (await s.req('POST', '/rules', { id: 'rule1', sql: `SELECT a FROM ${st} WHERE a > 0`, actions: [{ nop: {} }] }))
        .status,
      201,
    );
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: 'rule2',
          sql: `SELECT * FROM ${st}`,
          actions: [{ nop: {} }],
          triggered: false,
        })
      ).status,
      201,
    );
    await poll(
      async () => {
        await client.publishAsync(topic, JSON.stringify({ a: 1 }), { qos: 1 });
        return (await s.req('GET', '/rules/rule1/status')).json() as Record<string, number>;
      },
      (st1) => st1.sink_nop_0_0_records_in_total >= 3,
      'rows at the sink',
    );

    const { status, type, exp, text } = await scrape(metricsUrl);
    assert.equal(status, 200);
    assert.match(type, /^text\/plain/);
    assertLabelsSorted(text);
    assert.match(text, /^kuiper_op_records_in_total\{instance="0",op="3_filter",rule="rule1",type="op"\} \d+$/m);
    // prom-client's process and Node.js series, which an eKuiper dashboard's memory and CPU panels read
    assert.ok(find(exp, 'process_resident_memory_bytes', {})[0].value > 0);
    assert.equal(exp.types.get('process_cpu_seconds_total'), 'counter');
    assert.ok(find(exp, 'nodejs_heap_size_used_bytes', {})[0].value > 0);
    // metric types as eKuiper declares them
    for (const kind of ['source', 'op', 'sink']) {
      for (const m of ['records_in_total', 'records_out_total', 'messages_processed_total', 'exceptions_total']) {
        assert.equal(exp.types.get(`kuiper_${kind}_${m}`), 'counter', `${kind} ${m}`);
      }
      for (const m of ['process_latency_us', 'buffer_length'])
        assert.equal(exp.types.get(`kuiper_${kind}_${m}`), 'gauge');
      assert.equal(exp.types.get(`kuiper_${kind}_process_latency_us_hist`), 'histogram');
    }
    assert.equal(exp.types.get('kuiper_rule_status'), 'gauge');
    assert.equal(exp.types.get('kuiper_rule_count'), 'gauge');

    // every node of the running rule, labelled as eKuiper labels it; values agree with the status read after it
    const after = (await s.req('GET', '/rules/rule1/status')).json() as Record<string, number>;
    const nodes: Array<[string, string, string]> = [
      ['source', st, `source_${st}`],
      ['op', '2_decoder', 'op_2_decoder'],
      ['op', '3_filter', 'op_3_filter'],
      ['op', '4_project', 'op_4_project'],
      ['sink', 'nop_0', 'sink_nop_0'],
    ];
    for (const [kind, op, node] of nodes) {
      const labels = { rule: 'rule1', type: kind, op, instance: '0' };
      const [inTotal] = find(exp, `kuiper_${kind}_records_in_total`, labels);
      assert.ok(inTotal, `${node} records_in_total`);
      assert.deepEqual(Object.keys(inTotal.labels).sort(), ['instance', 'op', 'rule', 'type']);
      assert.ok(inTotal.value > 0 && inTotal.value <= after[`${node}_0_records_in_total`], `${node}: ${inTotal.value}`);
      assert.equal(find(exp, `kuiper_${kind}_exceptions_total`, labels)[0].value, 0);
      const buckets = find(exp, `kuiper_${kind}_process_latency_us_hist_bucket`, labels);
      assert.equal(buckets.at(-1)!.labels.le, '+Inf');
      const count = find(exp, `kuiper_${kind}_process_latency_us_hist_count`, labels)[0];
      assert.equal(buckets.at(-1)!.value, count.value);
      for (let i = 1; i < buckets.length; i++)
        assert.ok(buckets[i].value >= buckets[i - 1].value, 'cumulative buckets');
    }
    // the sink counted every latency it recorded: one per row sent
    assert.ok(find(exp, 'kuiper_sink_process_latency_us_hist_count', { rule: 'rule1' })[0].value > 0);
    assert.equal(find(exp, 'kuiper_rule_status', { ruleID: 'rule1' })[0].value, 1);
    assert.equal(find(exp, 'kuiper_rule_status', { ruleID: 'rule2' })[0].value, 0);
    assert.equal(find(exp, 'kuiper_rule_count', { status: 'running' })[0].value, 1);
    assert.equal(find(exp, 'kuiper_rule_count', { status: 'stop' })[0].value, 1);
    assert.equal(
      find(exp, 'kuiper_source_records_in_total', { rule: 'rule2' }).length,
      0,
      'a stopped rule has no node series',
    );

    // a deleted rule's series are gone
    assert.equal((await s.req('DELETE', '/rules/rule1')).status, 200);
    const gone = (await scrape(metricsUrl)).exp;
    assert.equal(gone.samples.filter((x) => x.labels.rule === 'rule1' || x.labels.ruleID === 'rule1').length, 0);
    assert.equal(find(gone, 'kuiper_rule_count', { status: 'running' })[0].value, 0);
    assert.equal(find(gone, 'kuiper_rule_status', { ruleID: 'rule2' })[0].value, 0);
  } finally {
    await client.endAsync();
  }
}

test('prometheus on the REST port when prometheusPort equals restPort', async () => {
  // the test server's restPort is 0 (ephemeral): the same value puts the metrics on the REST server
  const s = await startTestServer({ env: { KUIPER__BASIC__PROMETHEUS: 'true', KUIPER__BASIC__PROMETHEUSPORT: '0' } });
  try {
    assert.equal(s.metricsUrl, `${s.url}/metrics`);
    await runScenario(s, s.metricsUrl!);
  } finally {
    await s.dispose();
  }
});

test('prometheus on a port of its own; the REST port has no /metrics then, nor when prometheus is off', async () => {
  const port = await freePort();
  const s = await startTestServer({
    env: { KUIPER__BASIC__PROMETHEUS: 'true', KUIPER__BASIC__PROMETHEUSPORT: String(port) },
  });
  const off = await startTestServer();
  try {
    assert.equal(s.metricsUrl, `http://127.0.0.1:${port}/metrics`);
    assert.equal((await s.req('GET', '/metrics')).status, 404);
    assert.equal((await fetch(`http://127.0.0.1:${port}/other`)).status, 404);
    await runScenario(s, s.metricsUrl!);
    assert.equal(off.metricsUrl, undefined);
    assert.equal((await off.req('GET', '/metrics')).status, 404);
  } finally {
    await s.dispose();
    await off.dispose();
  }
  // closed with the server
  await assert.rejects(fetch(`http://127.0.0.1:${port}/metrics`));
});

test('a rule on a worker thread: the latency histogram of each node counts its records, not the metrics messages', async () => {
  const s = await startTestServer({
    env: { KUIPER__BASIC__PROMETHEUS: 'true', KUIPER__BASIC__PROMETHEUSPORT: '0', KUIPER__BASIC__WORKERS: '2' },
  });
  const topic = `eddy/promwk/${uid('in')}`;
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: uid('eddy_promwk'), reconnectPeriod: 0 });
  try {
    const st = uid('wk');
    const id = uid('rwk');
    let r = await s.req('POST', '/streams', { sql: `CREATE STREAM ${st} (a BIGINT) WITH (DATASOURCE="${topic}")` });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', { id, sql: `SELECT a FROM ${st}`, actions: [{ nop: {} }] });
    assert.equal(r.status, 201, r.text);
    const placed = (await s.req('GET', `/rules/${id}/status`)).json() as Record<string, unknown>;
    assert.equal(typeof placed.worker, 'number', 'the rule runs on a worker thread');
    // a first message proves the subscription; then bursts, so many records share one metrics message
    await poll(
      async () => {
        await client.publishAsync(topic, JSON.stringify({ a: 0 }), { qos: 1 });
        return (await s.req('GET', `/rules/${id}/status`)).json() as Record<string, number>;
      },
      (x) => x.sink_nop_0_0_records_out_total >= 1,
      'the first row at the sink',
    );
    for (let burst = 0; burst < 5; burst++)
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => client.publishAsync(topic, JSON.stringify({ a: burst * 100 + i + 1 }))),
      );
    // settled: the sink's count stays put across two status reads 300 ms apart
    let last = -1;
    await poll(
      async () => {
        await new Promise((res) => setTimeout(res, 300));
        return ((await s.req('GET', `/rules/${id}/status`)).json() as Record<string, number>)
          .sink_nop_0_0_records_out_total;
      },
      (n) => {
        const same = n === last && n >= 501;
        last = n;
        return same;
      },
      'every row at the sink',
    );
    const { exp } = await scrape(s.metricsUrl!);
    const labels = { rule: id, type: 'sink', op: 'nop_0', instance: '0' };
    const out = find(exp, 'kuiper_sink_records_out_total', labels)[0].value;
    // the sink records one latency per row it sent
    assert.equal(find(exp, 'kuiper_sink_process_latency_us_hist_count', labels)[0].value, out);
    assert.ok(out >= 501, String(out));
    const sum = find(exp, 'kuiper_sink_process_latency_us_hist_sum', labels)[0].value;
    assert.ok(sum >= 0);
    // the other nodes count at most one latency per record they handled (a node draining a queue records one per
    // drain; the fused decoder none, its time is counted upstream), never one per metrics message
    for (const [kind, op] of [
      ['source', st],
      ['op', '3_project'],
    ]) {
      const l = { rule: id, type: kind, op, instance: '0' };
      const count = find(exp, `kuiper_${kind}_process_latency_us_hist_count`, l)[0].value;
      const processed = find(exp, `kuiper_${kind}_records_in_total`, l)[0].value;
      assert.ok(count >= 1 && count <= processed, `${kind} ${op}: ${count} latencies for ${processed} records`);
    }
  } finally {
    await client.endAsync();
    await s.dispose();
  }
});
