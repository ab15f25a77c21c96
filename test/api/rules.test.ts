/**
 * The rules API end to end on a real server: real planner, runtime and connectors (MQTT on 127.0.0.1:1883, log and
 * memory sinks), persistence across a server restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { connectAsync } from 'mqtt';
import { startTestServer, type TestServer } from '../helpers/server.js';

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

type J = Record<string, any>;

async function poll<T>(fn: () => Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: T = await fn();
  while (!ok(last)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}; last: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 50));
    last = await fn();
  }
  return last;
}

async function status(s: TestServer, id: string): Promise<J> {
  return (await s.req('GET', `/rules/${id}/status`)).json() as J;
}

async function listStatus(s: TestServer): Promise<Record<string, string>> {
  const list = (await s.req('GET', '/rules')).json() as Array<{ id: string; status: string }>;
  return Object.fromEntries(list.map((r) => [r.id, r.status]));
}

/** GET with a JSON body (fetch cannot send one): `/rules/tags/match`. */
function getWithBody(url: string, body: unknown): Promise<unknown> {
  const payload = Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'GET', headers: { 'content-type': 'application/json', 'content-length': payload.length } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(JSON.parse(text)));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

async function memoryStream(s: TestServer, name: string): Promise<void> {
  const r = await s.req('POST', '/streams', {
    sql: `CREATE STREAM ${name} (a BIGINT) WITH (DATASOURCE="${name}/in", FORMAT="json", TYPE="memory")`,
  });
  assert.equal(r.status, 201, r.text);
}

test('lifecycle on the real runtime: texts, status objects, topology, explain, stop/start/restart', async () => {
  const s = await startTestServer();
  try {
    const st = uid('s');
    await memoryStream(s, st);
    let r = await s.req('POST', '/rules', { id: 'r1', sql: `SELECT a FROM ${st} WHERE a > 1`, actions: [{ log: {} }] });
    assert.equal(r.status, 201);
    assert.equal(r.text, 'Rule r1 was created successfully.');
    assert.deepEqual(await listStatus(s), { r1: 'Running' });

    const running = await status(s, 'r1');
    const keys = Object.keys(running);
    assert.deepEqual(keys.slice(0, 4), ['status', 'lastStartTimestamp', 'lastStopTimestamp', 'nextStartTimestamp']);
    assert.equal(running.status, 'running');
    assert.ok(Number.isInteger(running.lastStartTimestamp) && running.lastStartTimestamp > 0);
    assert.equal(running.lastStopTimestamp, 0);
    assert.equal(running.nextStartTimestamp, 0);
    const suffixes = [
      'records_in_total',
      'records_out_total',
      'messages_processed_total',
      'process_latency_us',
      'process_latency_ms',
      'buffer_length',
      'last_invocation',
      'exceptions_total',
      'last_exception',
      'last_exception_time',
    ];
    const nodes = ['source_' + st, 'op_2_filter', 'op_3_project', 'sink_log_0'];
    const ekuiperEnd = 4 + nodes.length * suffixes.length;
    assert.deepEqual(
      keys.slice(4, ekuiperEnd),
      nodes.flatMap((n) => suffixes.map((m) => `${n}_0_${m}`)),
    );
    // Eddy's own keys come after eKuiper's: `worker` when the rule runs on a worker thread (docs/runtime.md §1.10),
    // then the rule state (docs/rest-api.md §4.10)
    const onWorker = keys[ekuiperEnd] === 'worker';
    assert.deepEqual(keys.slice(ekuiperEnd + (onWorker ? 1 : 0)), [
      'state',
      'lastError',
      'lastErrorTime',
      `source_${st}_0_connection`,
      'sink_log_0_0_connection',
    ]);
    assert.deepEqual(
      [running.state, running[`source_${st}_0_connection`], running.sink_log_0_0_connection],
      ['running', 'connected', 'connected'],
    );
    assert.equal(running[`source_${st}_0_last_invocation`], '0001-01-01T00:00:00');

    r = await s.req('GET', '/rules/r1/topo');
    assert.deepEqual(r.json(), {
      sources: [`source_${st}`],
      edges: { [`source_${st}`]: ['op_2_filter'], op_2_filter: ['op_3_project'], op_3_project: ['sink_log_0'] },
    });
    r = await s.req('GET', '/rules/r1/explain');
    assert.equal(r.status, 200);
    for (const line of r.text.split('\n').filter((l) => l.trim() !== '')) assert.ok(JSON.parse(line).type, line);

    r = await s.req('POST', '/rules/r1/stop');
    assert.equal(r.text, 'Rule r1 was stopped.');
    assert.deepEqual(await status(s, 'r1'), {
      message: 'Stopped: canceled manually.',
      status: 'stopped',
      state: 'stopped',
      lastError: '',
      lastErrorTime: 0,
    });
    assert.equal(((await s.req('GET', '/rules/r1')).json() as J).triggered, false, 'stop persists triggered=false');
    r = await s.req('GET', '/rules/r1/topo');
    assert.equal(r.status, 200, 'a stopped rule keeps its topology');

    r = await s.req('POST', '/rules/r1/start');
    assert.equal(r.text, 'Rule r1 was started');
    const afterStart = await status(s, 'r1');
    assert.ok(afterStart.lastStopTimestamp > 0 && afterStart.lastStartTimestamp >= afterStart.lastStopTimestamp);
    r = await s.req('POST', '/rules/r1/restart');
    assert.equal(r.text, 'Rule r1 was restarted');
    assert.equal((await status(s, 'r1')).status, 'running');

    r = await s.req('PUT', '/rules/r1', { sql: `SELECT * FROM ${st}`, actions: [{ nop: {} }] });
    assert.equal(r.text, 'Rule r1 was updated successfully.');
    r = await s.req('GET', '/rules/r1/topo');
    assert.deepEqual(r.json(), {
      sources: [`source_${st}`],
      edges: { [`source_${st}`]: ['op_2_project'], op_2_project: ['sink_nop_0'] },
    });

    r = await s.req('DELETE', '/rules/r1');
    assert.equal(r.text, 'Rule r1 is dropped.');
  } finally {
    await s.dispose();
  }
});

test('planning errors reject the rule with the planner code and store nothing', async () => {
  const s = await startTestServer();
  try {
    const st = uid('s');
    await memoryStream(s, st);
    const cases: Array<[J, number, string | RegExp]> = [
      [
        { id: 'p1', sql: 'SELECT * FROM nosuch', actions: [{ log: {} }] },
        2101,
        'fail to get stream nosuch, please check if stream is created',
      ],
      [{ id: 'p2', sql: `SELECT * FROM ${st}`, actions: [{ foo: {} }] }, 2201, 'sink foo is not defined'],
      [{ id: 'p3', sql: `SELECT nosuchfield FROM ${st}`, actions: [{ log: {} }] }, 2101, /nosuchfield/],
      [
        { id: 'p4', sql: `SELECT * FROM ${st} WHERE a >`, actions: [{ log: {} }] },
        1000,
        /^invalid rule json: Parse SQL .* error: .+\.$/,
      ],
      [
        { id: 'p5', graph: { nodes: { a: { type: 'source' } }, topo: { sources: ['a'], edges: {} } } },
        2101,
        /^no edge defined for source node a$/,
      ],
    ];
    for (const [body, code, message] of cases) {
      const r = await s.req('POST', '/rules', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      const j = r.json() as J;
      assert.equal(j.error, code, j.message);
      if (typeof message === 'string') assert.equal(j.message, message);
      else assert.match(j.message, message);
      assert.equal((await s.req('GET', `/rules/${body.id}`)).status, 404);
    }
    let r = await s.req('POST', '/rules/validate', { id: 'v', sql: `SELECT * FROM ${st}`, actions: [{ log: {} }] });
    assert.equal(r.text, `{"sources":["${st}"],"valid":true}`);
    r = await s.req('POST', '/rules/validate', { id: 'v', sql: 'SELECT * FROM s9', actions: [{ log: {} }] });
    assert.equal(r.status, 422);
    assert.equal(r.text, 's9 is not found');
    r = await s.req('POST', '/rules', { id: 'u1', sql: `SELECT * FROM ${st}`, actions: [{ log: {} }] });
    assert.equal(r.status, 201);
    r = await s.req('PUT', '/rules/u1', { id: 'u1', sql: 'SELECT * FROM nosuch', actions: [{ log: {} }] });
    assert.deepEqual(r.json(), {
      error: 2101,
      message: 'Update rule error: fail to get stream nosuch, please check if stream is created',
    });
    assert.equal(((await s.req('GET', '/rules/u1')).json() as J).sql, `SELECT * FROM ${st}`, 'the old rule is kept');
    assert.equal((await status(s, 'u1')).status, 'running', 'and keeps running');
  } finally {
    await s.dispose();
  }
});

test('metrics count the records of an MQTT stream; last_invocation is a local date-time', async () => {
  const s = await startTestServer();
  const topic = `eddy/rules/${uid('t')}`;
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: uid('eddy_rules'), reconnectPeriod: 0 });
  try {
    const st = uid('s');
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM ${st} (a BIGINT) WITH (DATASOURCE="${topic}", FORMAT="json")`,
        })
      ).status,
      201,
    );
    assert.equal(
      (await s.req('POST', '/rules', { id: 'm1', sql: `SELECT a FROM ${st} WHERE a > 1`, actions: [{ nop: {} }] }))
        .status,
      201,
    );
    // publish until the source has subscribed and counted a record
    const first = await poll(
      async () => {
        await client.publishAsync(topic, JSON.stringify({ a: 1 }), { qos: 1 });
        return status(s, 'm1');
      },
      (st1) => st1[`source_${st}_0_records_in_total`] > 0,
      'subscription',
    );
    assert.ok(first[`source_${st}_0_records_in_total`] > 0);
    // probes published before that status may still be on their way: a row that passes the filter, in order behind
    // them on the topic, fences them off before the count is read
    await client.publishAsync(topic, JSON.stringify({ a: 2 }), { qos: 1 });
    const fenced = await poll(
      () => status(s, 'm1'),
      (x) => x.sink_nop_0_0_records_in_total >= 1,
      'the fence row at the sink',
    );
    const before = fenced[`source_${st}_0_records_in_total`] as number;
    for (const a of [2, 3]) await client.publishAsync(topic, JSON.stringify({ a }), { qos: 1 });
    const st2 = await poll(
      () => status(s, 'm1'),
      (x) => x.sink_nop_0_0_records_in_total >= 3,
      'records at the sink',
    );
    assert.equal(st2[`source_${st}_0_records_in_total`], before + 2);
    assert.equal(st2[`source_${st}_0_exceptions_total`], 0);
    assert.match(st2[`source_${st}_0_last_invocation`], /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?$/);
    assert.equal(st2.sink_nop_0_0_process_latency_ms, Math.floor(st2.sink_nop_0_0_process_latency_us / 1000));
    const all = (await s.req('GET', '/rules/status/all')).json() as J;
    assert.deepEqual(Object.keys(all.m1), ['status', 'last_exception', 'exceptions_total']);
    assert.equal(all.m1.status, 'Running');
  } finally {
    await client.endAsync();
    await s.dispose();
  }
});

test('drop a stream a rule reads, re-create it with another schema, restart: the rule reads the new definition (MQTT)', async () => {
  const s = await startTestServer();
  const inTopic = `eddy/drop/${uid('in')}`;
  const outTopic = `eddy/drop/${uid('out')}`;
  const client = await connectAsync('mqtt://127.0.0.1:1883', { clientId: uid('eddy_drop'), reconnectPeriod: 0 });
  const got: J[] = [];
  client.on('message', (_t, payload) => got.push(JSON.parse(payload.toString()) as J));
  await client.subscribeAsync(outTopic, { qos: 1 });
  try {
    const st = uid('demo');
    const create = (fields: string, topic: string) =>
      s.req('POST', '/streams', { sql: `CREATE STREAM ${st} (${fields}) WITH (DATASOURCE="${topic}", FORMAT="json")` });
    assert.equal((await create('a BIGINT', inTopic)).status, 201);
    const rule = {
      id: 'd1',
      sql: `SELECT * FROM ${st}`,
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: outTopic, sendSingle: true } }],
    };
    assert.equal((await s.req('POST', '/rules', rule)).status, 201);
    await poll(
      async () => {
        await client.publishAsync(inTopic, JSON.stringify({ a: 1, b: 'x' }), { qos: 1 });
        return got.length;
      },
      (n) => n > 0,
      'a first result',
    );
    assert.equal(got[0].a, 1);

    let r = await s.req('DELETE', `/streams/${st}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, `Stream ${st} is dropped.`);
    // the running rule keeps running on its plan
    assert.equal((await status(s, 'd1')).status, 'running');
    const before = got.length;
    await poll(
      async () => {
        await client.publishAsync(inTopic, JSON.stringify({ a: 2, b: 'y' }), { qos: 1 });
        return got.slice(before).map((g) => g.a);
      },
      (v) => v.includes(2),
      'a result after the drop',
    );

    r = await s.req('POST', '/rules/d1/restart');
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.json(), {
      error: 2101,
      message: `restart rule error: fail to get stream ${st}, please check if stream is created`,
    });

    // the new definition reads another topic and types `a` as a string
    const inTopic2 = `${inTopic}_2`;
    assert.equal((await create('a STRING', inTopic2)).status, 201);
    r = await s.req('POST', '/rules/d1/restart');
    assert.equal(r.status, 200, r.text);
    got.length = 0;
    await poll(
      async () => {
        await client.publishAsync(inTopic2, JSON.stringify({ a: 'three' }), { qos: 1 });
        return got.map((g) => g.a);
      },
      (v) => v.includes('three'),
      'a result of the restarted rule',
    );
    await client.publishAsync(inTopic, JSON.stringify({ a: 4 }), { qos: 1 });
    await client.publishAsync(inTopic2, JSON.stringify({ a: 'five' }), { qos: 1 });
    await poll(
      async () => got.map((g) => g.a),
      (v) => v.includes('five'),
      'the fence row',
    );
    assert.ok(!got.some((g) => g.a === 4), 'the old topic is no longer read');
    assert.ok(!got.some((g) => typeof g.a === 'number' && g.a > 2), 'only the new definition is read');
  } finally {
    await client.endAsync();
    await s.dispose();
  }
});

test('restart strategy: a sink that cannot connect is retried `attempts` times, then the rule stops with the error', async () => {
  const s = await startTestServer();
  try {
    const st = uid('s');
    await memoryStream(s, st);
    const created = Date.now();
    const r = await s.req('POST', '/rules', {
      id: 'bad',
      sql: `SELECT * FROM ${st}`,
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1', topic: 'x' } }],
      options: { restartStrategy: { attempts: 2, delay: 300, multiplier: 1.5, jitterFactor: 0.1 } },
    });
    assert.equal(r.status, 201, 'a run-time failure does not undo the creation');
    const final = await poll(
      () => status(s, 'bad'),
      (x) => x.status === 'stopped',
      'the rule to give up',
      15000,
    );
    assert.match(final.message, /^Stopped: .*127\.0\.0\.1:1.*\.$/);
    // two restarts waited about 300 ms and 450 ms (±10 %) before the rule gave up
    assert.ok(Date.now() - created >= 0.9 * (300 + 450), 'the restart delays were waited');
    assert.deepEqual(((await s.req('GET', '/rules/bad')).json() as J).options.restartStrategy, {
      attempts: 2,
      delay: 300,
      multiplier: 1.5,
      jitterFactor: 0.1,
    });
  } finally {
    await s.dispose();
  }
});

test('periodic rule: runs for `duration` on each cron firing and waits in between', async () => {
  const s = await startTestServer();
  try {
    const st = uid('s');
    await memoryStream(s, st);
    const r = await s.req('POST', '/rules', {
      id: 'cron1',
      sql: `SELECT * FROM ${st}`,
      actions: [{ nop: {} }],
      options: { cron: '@every 1s', duration: '400ms' },
    });
    assert.equal(r.status, 201);
    const run = await poll(
      () => status(s, 'cron1'),
      (x) => x.status === 'running',
      'a scheduled run',
    );
    assert.ok(run.nextStartTimestamp > 0, 'nextStartTimestamp of a periodic rule');
    await poll(
      () => status(s, 'cron1'),
      (x) => x.message === 'Stopped: waiting for next schedule.',
      'the end of the window',
    );
    await poll(
      () => status(s, 'cron1'),
      (x) => x.status === 'running',
      'the next firing',
    );
    await s.req('POST', '/rules/cron1/stop');
    assert.deepEqual(await status(s, 'cron1'), {
      message: 'Stopped: canceled manually.',
      status: 'stopped',
      state: 'stopped',
      lastError: '',
      lastErrorTime: 0,
    });
    const past = await s.req('POST', '/rules', {
      id: 'cron2',
      sql: `SELECT * FROM ${st}`,
      actions: [{ nop: {} }],
      options: {
        cron: '@every 1s',
        duration: '400ms',
        cronDatetimeRange: [{ begin: '2000-01-01 00:00:00', end: '2000-01-02 00:00:00' }],
      },
    });
    assert.equal(past.status, 201);
    assert.deepEqual(await status(s, 'cron2'), {
      message: 'Stopped: schedule terminated.',
      status: 'stopped',
      state: 'stopped',
      lastError: '',
      lastErrorTime: 0,
    });
  } finally {
    await s.dispose();
  }
});

test('range-only rule: the patrol opens it inside its datetime range and terminates it after', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__RULEPATROLINTERVAL: '100ms' } });
  try {
    const st = uid('s');
    await memoryStream(s, st);
    // a first rule loads the rule workers (a create waits for its worker's plan), so that the range rule's create is
    // quick
    assert.equal(
      (await s.req('POST', '/rules', { id: 'warm', sql: `SELECT * FROM ${st}`, actions: [{ nop: {} }] })).status,
      201,
    );
    // wide enough that the create request and the polls land in their phases on a loaded machine
    const begin = Date.now() + 5000;
    const r = await s.req('POST', '/rules', {
      id: 'range1',
      sql: `SELECT * FROM ${st}`,
      actions: [{ nop: {} }],
      options: { cronDatetimeRange: [{ beginTimestamp: begin, endTimestamp: begin + 4000 }] },
    });
    assert.equal(r.status, 201);
    assert.deepEqual(await status(s, 'range1'), {
      message: 'Stopped: waiting for next schedule.',
      status: 'stopped',
      state: 'stopped',
      lastError: '',
      lastErrorTime: 0,
    });
    await poll(
      () => status(s, 'range1'),
      (x) => x.status === 'running',
      'the range to open',
    );
    await poll(
      () => status(s, 'range1'),
      (x) => x.message === 'Stopped: schedule terminated.',
      'the range to end',
    );
  } finally {
    await s.dispose();
  }
});

test('secrets: describe masks them, a PUT of the masked rule keeps them', async () => {
  const s = await startTestServer();
  try {
    const st = uid('s');
    await memoryStream(s, st);
    await s.req('POST', '/rules', {
      id: 'sec',
      sql: `SELECT * FROM ${st}`,
      actions: [
        { mqtt: { server: 'tcp://127.0.0.1:1883', topic: uid('out'), password: 'secret123', sendSingle: true } },
      ],
      triggered: false,
    });
    const described = await s.req('GET', '/rules/sec');
    assert.doesNotMatch(described.text, /secret123/);
    const rule = described.json() as J;
    assert.equal(rule.actions[0].mqtt.password, '******');
    assert.equal((await s.req('PUT', '/rules/sec', rule)).status, 200);
    assert.equal(s.app.rules.get('sec')!.actions[0].mqtt.password, 'secret123');
    assert.equal((await status(s, 'sec')).status, 'stopped', 'triggered false in the body keeps it stopped');
  } finally {
    await s.dispose();
  }
});

test('describe and export give the rule text as submitted, spacing included, across a restart; secrets stay masked', async () => {
  const s = await startTestServer();
  let s2: TestServer | undefined;
  try {
    const st = uid('s');
    await memoryStream(s, st);
    const text = `{\n  "id": "v1",\n  "sql": "SELECT  *  FROM ${st}",\n  "actions": [ { "nop": {} } ]\n}`;
    assert.equal((await s.req('POST', '/rules', text)).status, 201);
    let r = await s.req('GET', '/rules/v1');
    assert.equal(r.text, text);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    const exported = (await s.req('POST', '/data/export', ['v1'])).json() as { rules: Record<string, string> };
    assert.equal(exported.rules.v1, text);

    // a bundle item without an id gets its key put first, the rest as written
    const item = `{ "sql": "SELECT * FROM ${st}", "actions": [{"nop":{}}] }`;
    r = await s.req('POST', '/data/import?partial=1', { content: JSON.stringify({ rules: { v2: item } }) });
    assert.equal(r.status, 200, r.text);
    assert.equal(
      (await s.req('GET', '/rules/v2')).text,
      `{"id":"v2", "sql": "SELECT * FROM ${st}", "actions": [{"nop":{}}] }`,
    );

    // text naming a secret: masked, keys sorted; a PUT of the masked text keeps the secret
    const secret = `{"id":"v3", "sql":"SELECT * FROM ${st}", "actions":[{"mqtt":{"server":"tcp://127.0.0.1:1883","topic":"t","password":"pw1"}}], "triggered":false}`;
    assert.equal((await s.req('POST', '/rules', secret)).status, 201);
    const masked = (await s.req('GET', '/rules/v3')).text;
    assert.equal(
      masked,
      `{"actions":[{"mqtt":{"password":"******","server":"tcp://127.0.0.1:1883","topic":"t"}}],"id":"v3","sql":"SELECT * FROM ${st}","triggered":false}`,
    );
    assert.equal((await s.req('PUT', '/rules/v3', masked)).status, 200);
    const all = (await s.req('GET', '/data/export')).json() as { rules: Record<string, string> };
    assert.match(all.rules.v3, /"password":"pw1"/);

    await s.stop();
    s2 = await startTestServer({ home: s.homeDir });
    assert.equal((await s2.req('GET', '/rules/v1')).text, text, 'the same text after a restart');
  } finally {
    await s2?.stop();
    await s.dispose();
  }
});

async function restartScenario(redisPrefix?: string): Promise<void> {
  const first = await startTestServer({ redisPrefix });
  const home = first.homeDir;
  let second: TestServer | undefined;
  const st = uid('s');
  try {
    await memoryStream(first, st);
    for (const id of ['run', 'stopped', 'off']) {
      const r = await first.req('POST', '/rules', {
        id,
        sql: `SELECT * FROM ${st}`,
        actions: [{ nop: {} }],
        ...(id === 'off' ? { triggered: false } : {}),
      });
      assert.equal(r.status, 201);
    }
    await first.req('POST', '/rules/stopped/stop');
    await first.req('PUT', '/rules/run/tags', { tags: ['keep'] });
    await first.stop();

    second = await startTestServer({ home, redisPrefix });
    const s2 = second;
    const statuses = await poll(
      () => listStatus(s2),
      (m) => Object.keys(m).length === 3,
      'rules restored',
    );
    assert.deepEqual(statuses, {
      off: 'Stopped: canceled manually.',
      run: 'Running',
      stopped: 'Stopped: canceled manually.',
    });
    assert.equal((await status(s2, 'run')).status, 'running');
    assert.deepEqual(((await s2.req('GET', '/rules/run')).json() as J).tags, ['keep']);
    assert.deepEqual(await getWithBody(`${s2.url}/rules/tags/match`, { keys: ['keep'] }), ['run']);
    // a restored stopped rule starts
    assert.equal((await s2.req('POST', '/rules/stopped/start')).status, 200);
    assert.equal((await status(s2, 'stopped')).status, 'running');
    for (const id of ['run', 'stopped', 'off']) assert.equal((await s2.req('DELETE', `/rules/${id}`)).status, 200);
    assert.equal((await s2.req('DELETE', `/streams/${st}`)).status, 200);
  } finally {
    if (second) await second.dispose();
    else await first.dispose();
  }
}

test('server restart: running rules come back running, stopped rules stay stopped (SQLite)', () => restartScenario());

test('server restart: running rules come back running, stopped rules stay stopped (Redis store)', () =>
  restartScenario(`eddy-test:${uid('rules')}:`));

test('a rule whose stream vanished while the server was down is kept as fail to create the topo', async () => {
  const first = await startTestServer();
  let second: TestServer | undefined;
  try {
    const st = uid('s');
    await memoryStream(first, st);
    await first.req('POST', '/rules', { id: 'orphan', sql: `SELECT * FROM ${st}`, actions: [{ nop: {} }] });
    // remove the stream behind the catalog's back, as an edited store would
    await first.app.store.delete('stream', st);
    await first.stop();
    second = await startTestServer({ home: first.homeDir });
    const s2 = second;
    const m = await poll(
      () => listStatus(s2),
      (x) => 'orphan' in x,
      'restore',
    );
    assert.equal(m.orphan, 'Stopped: fail to create the topo.');
    const topo = await s2.req('GET', '/rules/orphan/topo');
    assert.equal(topo.status, 400);
    assert.deepEqual(topo.json(), {
      error: 1001,
      message: "get rule topo error: Fail to get rule orphan's topo, make sure the rule has been started before",
    });
  } finally {
    if (second) await second.dispose();
    else await first.dispose();
  }
});

test('right after a restart every stored rule answers: requests wait for the restore instead of a 404 (Redis store)', async () => {
  // with Redis the restore waits on the network, so requests can arrive while it runs
  const redisPrefix = `eddy-test:${uid('boot')}:`;
  const first = await startTestServer({ redisPrefix });
  let second: TestServer | undefined;
  try {
    const st = uid('s');
    await memoryStream(first, st);
    // many stored rules make the restore take a while; written straight to the store to keep the test quick
    const ids = Array.from({ length: 300 }, (_, i) => `boot_${String(i).padStart(3, '0')}`);
    for (const id of ids) {
      await first.app.store.set(
        'rule',
        id,
        JSON.stringify({ id, sql: `SELECT * FROM ${st} WHERE a > 1`, actions: [{ nop: {} }] }),
      );
    }
    await first.stop();
    second = await startTestServer({ home: first.homeDir, redisPrefix });
    // no polling: the very first requests must see the stored rules
    const last = ids[ids.length - 1];
    const [desc, list, st2] = await Promise.all([
      second.req('GET', `/rules/${last}`),
      second.req('GET', '/rules'),
      second.req('GET', `/rules/${last}/status`),
    ]);
    assert.equal(desc.status, 200, desc.text);
    assert.equal((desc.json() as J).sql, `SELECT * FROM ${st} WHERE a > 1`);
    assert.deepEqual(
      (list.json() as J[]).map((r) => r.id),
      ids,
    );
    assert.equal((st2.json() as J).status, 'running');
    for (const id of ids) await second.app.store.delete('rule', id);
    await second.app.store.delete('stream', st);
  } finally {
    if (second) await second.dispose();
    else await first.dispose();
  }
});

test('a restart with more stored rules than are started at once: /ping answers while they are restored, then every rule is listed as it is', async () => {
  const first = await startTestServer();
  let second: TestServer | undefined;
  try {
    const st = uid('s');
    await memoryStream(first, st);
    // more than the 500 started at once (rules/service.ts RESTORE_WINDOW), written straight to the store
    const ids = Array.from({ length: 650 }, (_, i) => `many_${String(i).padStart(3, '0')}`);
    const stopped = new Set(ids.filter((_, i) => i % 100 === 7));
    const broken = ids[ids.length - 2];
    for (const id of ids) {
      const sql = id === broken ? `SELECT * FROM missing_${st}` : `SELECT * FROM ${st} WHERE a > 1`;
      const triggered = !stopped.has(id);
      await first.app.store.set('rule', id, JSON.stringify({ id, sql, actions: [{ nop: {} }], triggered }));
    }
    await first.stop();
    second = await startTestServer({ home: first.homeDir });
    const s = second;
    // both asked at once: the ping does not wait for the restore, the list does
    const order: string[] = [];
    const [ping, list] = await Promise.all(
      ['/ping', '/rules'].map((path) => s.req('GET', path).then((r) => (order.push(path), r))),
    );
    assert.equal(ping.status, 200);
    assert.deepEqual(order, ['/ping', '/rules']);
    const shown = Object.fromEntries(
      (list.json() as Array<{ id: string; status: string }>).map((r) => [r.id, r.status]),
    );
    assert.deepEqual(Object.keys(shown), ids);
    for (const id of ids) {
      const want =
        id === broken
          ? 'Stopped: fail to create the topo.'
          : stopped.has(id)
            ? 'Stopped: canceled manually.'
            : 'Running';
      assert.equal(shown[id], want, id);
    }
  } finally {
    if (second) await second.dispose();
    else await first.dispose();
  }
});
