/**
 * Ruleset import/export and the initial ruleset of a fresh data folder.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.js';
import { call, ok, ruleStates, uid, until } from './helpers.js';

function ruleset(stream: string, rule: string, extra: Record<string, Record<string, string>> = {}) {
  return JSON.stringify({
    streams: {
      [stream]: `CREATE STREAM ${stream} (a BIGINT) WITH (DATASOURCE="rs/${stream}", FORMAT="json")`,
      ...(extra.streams ?? {}),
    },
    tables: { ...(extra.tables ?? {}) },
    rules: {
      [rule]: JSON.stringify({ sql: `SELECT * FROM ${stream}`, actions: [{ log: {} }] }),
      ...(extra.rules ?? {}),
    },
  });
}

test('ruleset import creates what does not exist, counts it, and starts the rules; export gives it back', async () => {
  const s = await startTestServer();
  try {
    const st = uid('s');
    const r1 = uid('r');
    const first = await ok(s, 'POST', '/ruleset/import', { content: ruleset(st, r1) });
    assert.equal(first.text, 'imported 1 streams, 0 tables and 1 rules');
    await until('rule running', async () => ((await ruleStates(s))[r1] === 'Running' ? true : undefined));

    const again = await ok(s, 'POST', '/ruleset/import', { content: ruleset(st, r1) });
    assert.equal(again.text, 'imported 0 streams, 0 tables and 0 rules');

    // only CREATE statements of the section's kind run (docs/compatibility.md D24); a rule that cannot be planned is kept, stopped
    const t = uid('t');
    const orphan = uid('orphan');
    const mixed = await ok(s, 'POST', '/ruleset/import', {
      content: ruleset(st, r1, {
        streams: { drop: `DROP STREAM ${st}` },
        tables: {
          [t]: `CREATE TABLE ${t} (k STRING) WITH (DATASOURCE="rs/${t}")`,
          wrong: `CREATE STREAM ${uid('w')} () WITH (DATASOURCE="w")`,
        },
        rules: { [orphan]: JSON.stringify({ sql: 'SELECT * FROM nowhere', actions: [{ log: {} }] }) },
      }),
    });
    assert.equal(mixed.text, 'imported 0 streams, 1 tables and 1 rules');
    assert.ok((await ok(s, 'GET', '/streams')).json().includes(st));
    assert.match((await ruleStates(s))[orphan], /^Stopped: fail to create the topo/);

    const exp = await ok(s, 'POST', '/ruleset/export');
    assert.equal(exp.headers.get('content-type'), 'application/octet-stream');
    const rs = exp.json();
    assert.deepEqual(Object.keys(rs), ['streams', 'tables', 'rules']);
    assert.deepEqual(Object.keys(rs.streams), [st]);
    assert.deepEqual(Object.keys(rs.tables), [t]);
    assert.deepEqual(Object.keys(rs.rules).sort(), [orphan, r1].sort());
    assert.equal(JSON.parse(rs.rules[r1]).id, r1);
  } finally {
    await s.dispose();
  }
});

test('ruleset import request errors', async () => {
  const s = await startTestServer();
  try {
    const cases: Array<[unknown, string | RegExp]> = [
      [{ content: '{}', file: 'file:///x.json' }, 'Invalid body: Cannot specify both content and file: bad request'],
      [{}, 'Invalid body: must specify content or file: bad request'],
      [
        { file: `file://${tmpdir()}/nonexistent/eddy/rs.json` },
        `Fail to read file: stat ${tmpdir()}/nonexistent/eddy/rs.json: no such file or directory`,
      ],
      [{ content: 'not json' }, /^Import ruleset error: invalid import file: /],
      ['{"content"', /^Invalid body: Error decoding json: /],
    ];
    for (const [body, msg] of cases) {
      const r = await call(s, 'POST', '/ruleset/import', body);
      assert.equal(r.status, 400);
      if (typeof msg === 'string') assert.equal(r.json().message, msg);
      else assert.match(r.json().message, msg);
    }
  } finally {
    await s.dispose();
  }
});

test('data/init.json is imported at the first start only', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-init-'));
  mkdirSync(join(home, 'data'), { recursive: true });
  const st = uid('init_s');
  const r = uid('init_r');
  writeFileSync(join(home, 'data', 'init.json'), ruleset(st, r));
  const s = await startTestServer({ home });
  try {
    // imported before the stored rules are restored: the very first requests see it
    assert.ok((await ok(s, 'GET', '/streams')).json().includes(st));
    assert.equal((await ok(s, 'GET', `/rules/${r}`)).json().id, r);
    assert.ok(existsSync(join(home, 'data', 'initialized')));
    await until('the initial rule', async () => ((await ruleStates(s))[r] === 'Running' ? true : undefined));
    await ok(s, 'DELETE', `/rules/${r}`);
    await ok(s, 'DELETE', `/streams/${st}`);
    await s.stop();
    const again = await startTestServer({ home });
    try {
      await new Promise((res) => setTimeout(res, 300));
      assert.deepEqual((await ok(again, 'GET', '/streams')).json(), []);
    } finally {
      await again.dispose();
    }
  } finally {
    await s.dispose();
  }
});

test('the first start creates the initialized marker even without init.json; one added later is never read', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-init-'));
  const s = await startTestServer({ home });
  try {
    await until('the marker', async () => (existsSync(join(home, 'data', 'initialized')) ? true : undefined));
    await s.stop();
    const st = uid('late_s');
    writeFileSync(join(home, 'data', 'init.json'), ruleset(st, uid('late_r')));
    const again = await startTestServer({ home });
    try {
      await new Promise((res) => setTimeout(res, 300));
      assert.deepEqual((await ok(again, 'GET', '/streams')).json(), []);
    } finally {
      await again.stop();
    }
  } finally {
    await s.dispose();
  }
});
