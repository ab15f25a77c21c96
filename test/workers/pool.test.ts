/**
 * Rules on worker threads (docs/runtime.md §1.10), against the real broker on loopback: an MQTT rule placed on a worker
 * processes data end to end; the rules API answers the same with the rules on the main thread (`basic.workers: none`),
 * on 1 and on 2 workers; the status of a rule whose worker is stuck answers at once and says so; a worker that ends is
 * replaced and its rules run again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { publisher, subscriber, uniqueTopic, until } from '../connectors/helpers.js';
import { feed, publishUntilStopped, status, type J } from './helpers.js';

async function mqttRule(s: TestServer, topic: string, id: string): Promise<void> {
  const stream = `st_${id}`;
  let r = await s.req('POST', '/streams', {
    sql: `CREATE STREAM ${stream} (temperature FLOAT, n BIGINT) WITH (DATASOURCE="${topic}/in", FORMAT="json")`,
  });
  assert.equal(r.status, 201, r.text);
  r = await s.req('POST', '/rules', {
    id,
    sql: `SELECT n, temperature * 2 AS t2 FROM ${stream} WHERE temperature > 50`,
    actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out`, sendSingle: true } }],
  });
  assert.equal(r.status, 201, r.text);
}

test('an MQTT rule placed on a worker processes data end to end; its status names the worker', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('wk');
  const sub = await subscriber(`${topic}/out`);
  try {
    assert.equal(s.app.workers?.size, 2);
    const id = `r_${topic.replace(/\W/g, '_')}`;
    await mqttRule(s, topic, id);
    await feed(topic, () => sub.messages.length, 3);
    const row = JSON.parse(sub.messages[0].text) as J;
    assert.equal(row.t2, 120);
    const st = await status(s, id);
    assert.equal(st.status, 'running');
    assert.equal(st.worker, s.app.workers?.place(id));
    assert.equal(st.workerStatus, undefined);
    // counters come from the worker
    await until(() => true);
    let last: J = st;
    const end = Date.now() + 10_000;
    while (!((last.op_4_project_0_records_out_total as number) >= 3) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
      last = await status(s, id);
    }
    assert.ok((last.op_4_project_0_records_out_total as number) >= 3, JSON.stringify(last));
  } finally {
    await sub.close();
    await s.dispose();
  }
});

test('the first rule of a server with workers receives what is published right after POST /rules answered', async () => {
  // the workers are still loading when the first rule is created: its creation answers once the rule opened there
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('cold');
  const sub = await subscriber(`${topic}/out`);
  const pub = await publisher();
  try {
    const id = `r_${topic.replace(/\W/g, '_')}`;
    await mqttRule(s, topic, id);
    await pub.publishAsync(`${topic}/in`, JSON.stringify({ n: 1, temperature: 70 }));
    await until(() => sub.messages.length >= 1, 10_000, 'the output of the first message');
    assert.deepEqual(JSON.parse(sub.messages[0].text), { n: 1, t2: 140 });
    assert.equal((await status(s, id)).worker, s.app.workers?.place(id));
  } finally {
    await pub.endAsync();
    await sub.close();
    await s.dispose();
  }
});

test('the rules API answers the same with the rules on the main thread, on 1 and on 2 workers', async () => {
  const answers: J[] = [];
  for (const workers of ['none', '1', '2']) {
    const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: workers } });
    const topic = uniqueTopic(`par${workers}`);
    const sub = await subscriber(`${topic}/out`);
    try {
      const id = 'parity_rule';
      await mqttRule(s, topic, id);
      await feed(topic, () => sub.messages.length, 2);
      // let the counters settle: the input stops, then wait until the status no longer changes
      let prev = '';
      let st: J = {};
      for (;;) {
        await new Promise((r) => setTimeout(r, 300));
        st = await status(s, id);
        const counts = JSON.stringify(Object.entries(st).filter(([k]) => k.endsWith('_total')));
        if (counts === prev) break;
        prev = counts;
      }
      const counters = Object.fromEntries(
        Object.entries(st).filter(([k]) => k.endsWith('_total') || k.endsWith('buffer_length')),
      );
      const ruleDesc = (await s.req('GET', `/rules/${id}`)).json() as J;
      ruleDesc.actions = undefined; // the topic differs per run
      answers.push({
        list: (await s.req('GET', '/rules')).json(),
        describe: ruleDesc,
        topo: (await s.req('GET', `/rules/${id}/topo`)).json(),
        explain: (await s.req('GET', `/rules/${id}/explain`)).text,
        statusKeys: Object.keys(st).filter((k) => k !== 'worker'),
        // one output per hot row: same ratios however many rows the start-up race let through
        outputsPerIn:
          (counters.op_4_project_0_records_out_total as number) - (counters.op_3_filter_0_records_out_total as number),
        exceptions: Object.entries(counters).filter(([k, v]) => k.endsWith('exceptions_total') && v !== 0),
        statusAll: Object.keys((await s.req('GET', '/rules/status/all')).json() as J),
        stopped: (await s.req('POST', `/rules/${id}/stop`)).text,
        afterStop: await status(s, id),
        started: (await s.req('POST', `/rules/${id}/start`)).text,
        deleted: (await s.req('DELETE', `/rules/${id}`)).text,
      });
    } finally {
      await sub.close();
      await s.dispose();
    }
  }
  assert.deepEqual(answers[1], answers[0]);
  assert.deepEqual(answers[2], answers[0]);
});

test('a stuck worker: the status answers at once and says so; a worker that ends is replaced and its rules run again', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('stk');
  const sub = await subscriber(`${topic}/out`);
  try {
    const pool = s.app.workers!;
    await pool.ready();
    const id = `r_${topic.replace(/\W/g, '_')}`;
    await mqttRule(s, topic, id);
    await feed(topic, () => sub.messages.length, 1);
    const slot = pool.place(id);

    // busy for longer than two heartbeats but shorter than the replacement limit
    pool.stall(slot, 3000);
    let st = await status(s, id);
    const end = Date.now() + 10_000;
    while (st.workerStatus === undefined && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
      st = await status(s, id);
    }
    assert.equal(st.status, 'running');
    assert.equal(st.workerStatus, `worker ${slot} is not answering its heartbeat`);
    // the state says the rule does not work meanwhile (docs/runtime.md §1.5.1)
    assert.deepEqual([st.state, st.stateReason], ['degraded', st.workerStatus]);
    // the worker recovers by itself
    while (st.workerStatus !== undefined && Date.now() < end + 10_000) {
      await new Promise((r) => setTimeout(r, 50));
      st = await status(s, id);
    }
    assert.equal(st.workerStatus, undefined);
    assert.equal(pool.replaced[slot] ?? 0, 0);

    // a crash: the worker is replaced and the rule opens again there
    pool.crash(slot);
    await until(() => (pool.replaced[slot] ?? 0) === 1, 15_000, 'the replacement');
    await pool.ready();
    const before = sub.messages.length;
    await feed(topic, () => sub.messages.length, before + 2, 1000);
    assert.equal((await status(s, id)).status, 'running');
  } finally {
    await sub.close();
    await s.dispose();
  }
});

test('a rule whose evaluation of one record outlasts basic.ruleEvalLimit is stopped with an error naming it; its worker neighbours run on; a rule with a longer evalLimit finishes the same work', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2', KUIPER__BASIC__RULEEVALLIMIT: '1000' } });
  const topic = uniqueTopic('heavy');
  const sub = await subscriber(`${topic}/out`);
  try {
    const pool = s.app.workers!;
    await pool.ready();
    const heavy = `heavy_${topic.replace(/\W/g, '_')}`;
    let r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM st_${heavy} (s STRING) WITH (DATASOURCE="${topic}/heavy", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    // each column checksums a 50-million-character string: seconds of synchronous work for one record
    const columns = Array.from({ length: 30 }, (_, i) => `crc32(lpad(s, ${50_000_000 + i})) AS c${i}`).join(', ');
    r = await s.req('POST', '/rules', { id: heavy, sql: `SELECT ${columns} FROM st_${heavy}`, actions: [{ nop: {} }] });
    assert.equal(r.status, 201, r.text);
    // a neighbour on the same worker
    let light = '';
    for (let i = 0; light === ''; i++)
      if (pool.place(`light${i}_${heavy}`) === pool.place(heavy)) light = `light${i}_${heavy}`;
    await mqttRule(s, topic, light);
    await feed(topic, () => sub.messages.length, 1);

    const st = await publishUntilStopped(s, heavy, topic);
    assert.equal(st.status, 'stopped');
    const message = String(st.message);
    assert.match(message, new RegExp(`^Stopped: rule ${heavy} was stopped: evaluating one record in op_\\d+_project `));
    // the SELECT list is quoted from its start, cut at 200 characters; the limit names the setting it came from
    assert.ok(
      message.endsWith(
        `_project (the SELECT list \`${columns.slice(0, 199)}…\`) took more than 1000 ms (basic.ruleEvalLimit).`,
      ),
      message,
    );
    assert.equal(pool.replaced[pool.place(heavy)], 1);
    // the neighbour opened again on the new worker and delivers
    const before = sub.messages.length;
    await feed(topic, () => sub.messages.length, before + 2, 1000);
    assert.equal((await status(s, light)).status, 'running');

    // the same work under a rule's own, longer evalLimit: the record is evaluated to the end and delivered
    const patient = `patient_${heavy}`;
    const patientSub = await subscriber(`${topic}/patient`);
    try {
      r = await s.req('POST', '/rules', {
        id: patient,
        sql: `SELECT ${columns} FROM st_${heavy}`,
        actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/patient`, sendSingle: true } }],
        options: { evalLimit: 600_000 },
      });
      assert.equal(r.status, 201, r.text);
      const replacedBefore = pool.replaced[pool.place(patient)] ?? 0;
      const pub2 = await publisher();
      try {
        const until2 = Date.now() + 120_000;
        // one record at a time: again only when the previous one may have missed the subscription's start
        while (patientSub.messages.length === 0 && Date.now() < until2) {
          await pub2.publishAsync(`${topic}/heavy`, JSON.stringify({ s: 'x' }));
          for (let i = 0; i < 100 && patientSub.messages.length === 0; i++)
            await new Promise((res) => setTimeout(res, 200));
        }
      } finally {
        await pub2.endAsync();
      }
      assert.ok(patientSub.messages.length > 0, 'the patient rule delivered its record');
      assert.equal(Object.keys(JSON.parse(patientSub.messages[0].text) as J).length, 30);
      assert.equal((await status(s, patient)).status, 'running');
      assert.equal(pool.replaced[pool.place(patient)] ?? 0, replacedBefore);
    } finally {
      await patientSub.close();
    }
  } finally {
    await sub.close();
    await s.dispose();
  }
});

test('a rule on a worker restarted after its stream was dropped and created again reads the new definition', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('wkdef');
  const sub = await subscriber(`${topic}/out`);
  try {
    const id = `r_${topic.replace(/\W/g, '_')}`;
    await mqttRule(s, topic, id);
    await feed(topic, () => sub.messages.length, 1);
    assert.equal((await s.req('POST', `/rules/${id}/stop`)).status, 200);
    assert.equal((await s.req('DELETE', `/streams/st_${id}`)).status, 200);
    // dropped: the worker must not start the rule from the definition it was sent before
    let r = await s.req('POST', `/rules/${id}/start`);
    assert.equal(r.status, 400, r.text);
    assert.match(r.text, /fail to get stream/);
    r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM st_${id} (temperature FLOAT, n BIGINT) WITH (DATASOURCE="${topic}/in2", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', `/rules/${id}/start`);
    assert.equal(r.status, 200, r.text);
    const before = sub.messages.length;
    const pub = await publisher();
    try {
      const end = Date.now() + 30_000;
      let n = 1000;
      while (sub.messages.length === before) {
        assert.ok(Date.now() < end, 'no output from the new topic');
        await pub.publishAsync(`${topic}/in2`, JSON.stringify({ n: n++, temperature: 70 }));
        await new Promise((res) => setTimeout(res, 30));
      }
    } finally {
      await pub.endAsync();
    }
    assert.ok((JSON.parse(sub.messages[before].text) as { n: number }).n >= 1000);
  } finally {
    await sub.close();
    await s.dispose();
  }
});

test('a config key written after a worker started reaches the rules that worker opens next', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('wkconf');
  try {
    // a rule on each worker first, so both threads have read the config keys before the change
    const pool = s.app.workers!;
    const seen = new Set<number>();
    for (let i = 0; seen.size < 2; i++) {
      const id = `warm_${i}_${topic.replace(/\W/g, '_')}`;
      await mqttRule(s, `${topic}/${i}`, id);
      seen.add(pool.place(id));
    }
    let r = await s.req('PUT', '/metadata/sources/mqtt/confKeys/wk_unreachable', { server: 'tcp://127.0.0.1:1' });
    assert.equal(r.status, 200, r.text);
    r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM wkconf (n BIGINT) WITH (DATASOURCE="${topic}/k", FORMAT="json", CONF_KEY="wk_unreachable")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: 'wkconf_rule',
      sql: 'SELECT n FROM wkconf',
      actions: [{ nop: {} }],
    });
    assert.equal(r.status, 201, r.text);
    // the source must try the key's broker (nothing listens on port 1), not the default one
    const end = Date.now() + 20_000;
    let st = await status(s, 'wkconf_rule');
    while (!/ECONNREFUSED|127\.0\.0\.1:1\b/.test(JSON.stringify(st)) && Date.now() < end) {
      await new Promise((res) => setTimeout(res, 100));
      st = await status(s, 'wkconf_rule');
    }
    assert.match(JSON.stringify(st), /ECONNREFUSED|127\.0\.0\.1:1\b/);
  } finally {
    await s.dispose();
  }
});
