/**
 * Rules reading tables run on the rule workers (docs/runtime.md §1.10) and see the rows the user sees: a memory lookup
 * table holds on the worker the rows published before the rule started (the main thread's instance hands them over)
 * and those published after; a Redis lookup table and a file scan table are read by the worker's own instances.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { publisher, subscriber, uniqueTopic } from '../connectors/helpers.js';
import { status, type J } from './helpers.js';

async function created(s: TestServer, path: string, body: unknown): Promise<void> {
  const r = await s.req('POST', path, body);
  assert.equal(r.status, 201, r.text);
}

/** The sum of one metric over the nodes of rule `id` whose names start with `prefix`. */
async function counted(s: TestServer, id: string, prefix: string, metric: string): Promise<number> {
  const st = await status(s, id);
  return Object.entries(st)
    .filter(([k]) => k.startsWith(prefix) && k.endsWith(metric))
    .reduce((n, [, v]) => n + Number(v), 0);
}

test('rules joining lookup and scan tables run on a worker and join the rows the tables hold', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('tables');
  const tag = topic.replace(/\W/g, '_');
  const sub = await subscriber(`${topic}/out/#`);
  const pub = await publisher();
  const redis = new Redis({ host: '127.0.0.1', port: 6379, db: 5, lazyConnect: true });
  await redis.connect();
  const dir = mkdtempSync(join(tmpdir(), 'eddy-tables-'));
  const redisKey = `eddy-worker-${tag}`;
  const mqtt = (leaf: string) => ({ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out/${leaf}` } });
  try {
    await redis.set(redisKey, JSON.stringify({ id: redisKey, label: 'kitchen' }));
    writeFileSync(join(dir, 'colors.json'), JSON.stringify([{ id: 1, color: 'red' }]));
    const r = await s.req('PUT', `/metadata/sources/file/confKeys/${tag}`, { fileType: 'json', path: dir });
    assert.ok(r.status < 300, r.text);
    await created(s, '/streams', {
      sql: `CREATE STREAM in_${tag} () WITH (TYPE="mqtt", DATASOURCE="${topic}/in", FORMAT="json")`,
    });
    await created(s, '/streams', {
      sql: `CREATE STREAM fill_${tag} () WITH (TYPE="mqtt", DATASOURCE="${topic}/fill", FORMAT="json")`,
    });
    await created(s, '/tables', {
      sql: `CREATE TABLE lk_${tag} () WITH (TYPE="memory", DATASOURCE="${topic}/lk", KIND="lookup", KEY="id")`,
    });
    await created(s, '/tables', {
      sql: `CREATE TABLE rd_${tag} () WITH (TYPE="redis", DATASOURCE="5", KIND="lookup", KEY="id")`,
    });
    await created(s, '/tables', {
      sql: `CREATE TABLE ft_${tag} () WITH (TYPE="file", CONF_KEY="${tag}", DATASOURCE="colors.json")`,
    });
    // the memory table gets its first row before any rule joins it
    await created(s, '/rules', {
      id: `fill_${tag}`,
      sql: `SELECT * FROM fill_${tag}`,
      actions: [{ memory: { topic: `${topic}/lk` } }],
    });
    const filled = async () => (await counted(s, `fill_${tag}`, 'sink_memory', '_records_out_total')) >= 1;
    const end = Date.now() + 30_000;
    while (!(await filled())) {
      assert.ok(Date.now() < end, 'the memory table filled');
      await pub.publishAsync(`${topic}/fill`, JSON.stringify({ id: 1, name: 'before' }));
      await new Promise((res) => setTimeout(res, 200));
    }

    const rules: Array<[string, string]> = [
      [
        'memory',
        `SELECT in_${tag}.n, lk_${tag}.name FROM in_${tag} INNER JOIN lk_${tag} ON in_${tag}.id = lk_${tag}.id`,
      ],
      [
        'redis',
        `SELECT in_${tag}.n, rd_${tag}.label FROM in_${tag} INNER JOIN rd_${tag} ON in_${tag}.room = rd_${tag}.id`,
      ],
      [
        'scan',
        `SELECT in_${tag}.n, ft_${tag}.color FROM in_${tag} INNER JOIN ft_${tag} ON in_${tag}.id = ft_${tag}.id`,
      ],
    ];
    for (const [name, sql] of rules) await created(s, '/rules', { id: `${name}_${tag}`, sql, actions: [mqtt(name)] });
    for (const [name] of rules) {
      const st: J = await status(s, `${name}_${tag}`);
      assert.equal(st.status, 'running', JSON.stringify(st));
      assert.equal(
        st.worker,
        s.app.workers?.place(`${name}_${tag}`),
        `${name} runs on its worker: ${JSON.stringify(st)}`,
      );
    }

    // a row published after the rules started reaches the worker's memory table too
    await pub.publishAsync(`${topic}/fill`, JSON.stringify({ id: 2, name: 'after' }));
    const out = (leaf: string) =>
      sub.messages.filter((m) => m.topic === `${topic}/out/${leaf}`).flatMap((m) => JSON.parse(m.text) as J[]);
    const seen = (leaf: string, field: string, value: unknown) => out(leaf).some((row) => row[field] === value);
    const until2 = Date.now() + 30_000;
    let n = 0;
    while (
      !(seen('memory', 'name', 'before') && seen('memory', 'name', 'after')) ||
      !seen('redis', 'label', 'kitchen') ||
      !seen('scan', 'color', 'red')
    ) {
      assert.ok(Date.now() < until2, `joined rows: ${JSON.stringify(sub.messages.slice(0, 20).map((m) => m.text))}`);
      for (const id of [1, 2])
        await pub.publishAsync(`${topic}/in`, JSON.stringify({ n: n++, id, room: id === 1 ? redisKey : 'none' }));
      await new Promise((res) => setTimeout(res, 200));
    }
    // rows whose key no table holds join nothing
    assert.ok(out('redis').every((row) => row.label === 'kitchen'));
    assert.ok(out('scan').every((row) => row.color === 'red'));
  } finally {
    await pub.endAsync();
    await sub.close();
    await redis.del(redisKey);
    redis.disconnect();
    await s.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
