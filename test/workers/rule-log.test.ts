/**
 * A rule with its own log file (`logFilename`) and `debug` runs on a rule worker (docs/runtime.md §1.10): what its
 * nodes log there lands in the rule's file in the log folder, beside the main thread's lines about the rule.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.js';
import { publisher, uniqueTopic } from '../connectors/helpers.js';
import { status } from './helpers.js';

test('a rule with logFilename and debug runs on its worker and logs into its own file', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('rulelog');
  const tag = topic.replace(/\W/g, '_');
  const id = `log_${tag}`;
  const pub = await publisher();
  const file = join(s.homeDir, 'log', `${id}.log`);
  try {
    let r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM in_${tag} () WITH (TYPE="mqtt", DATASOURCE="${topic}/in", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id,
      sql: `SELECT arr FROM in_${tag}`,
      // the template fails on every row: the sink node logs it, on the worker
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out`, dataTemplate: '{{index .arr 5}}' } }],
      options: { logFilename: `${id}.log`, debug: true },
    });
    assert.equal(r.status, 201, r.text);
    const st = await status(s, id);
    assert.equal(st.worker, s.app.workers?.place(id), `the rule runs on its worker: ${JSON.stringify(st)}`);

    const logged = (what: string) => existsSync(file) && readFileSync(file, 'utf8').includes(what);
    const end = Date.now() + 30_000;
    while (!logged('cannot transform data')) {
      assert.ok(Date.now() < end, `the worker's line in ${file}`);
      await pub.publishAsync(`${topic}/in`, JSON.stringify({ arr: [1] }));
      await new Promise((res) => setTimeout(res, 200));
    }
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const failed = lines.find((l) => String(l.msg).includes('cannot transform data'));
    assert.equal(failed?.rule, id);
    // the main thread's lines about the rule go to the same file
    assert.ok(
      lines.some((l) => l.msg === 'rule started' && l.rule === id),
      JSON.stringify(lines),
    );
  } finally {
    await pub.endAsync();
    await s.dispose();
  }
});
