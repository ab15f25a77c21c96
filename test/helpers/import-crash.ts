/**
 * Crash-atomic full import, the scenario of test/bundle/crash.test.ts and test/bundle/crash-redis.test.ts: Eddy runs
 * as a child process and is killed with SIGKILL while `POST /data/import` replaces 3 streams and 3 rules with 2,000 of
 * each; after a restart on the same home the data must be all old (and the import status say the import was
 * interrupted) or all new, never a mix. `store` holds the environment that selects the metadata store.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEddyProcess } from './eddy-process.js';

const N = 2000;

async function getJson(url: string): Promise<unknown> {
  const r = await fetch(url);
  return r.json();
}

/** Polls `cond` until it holds; false when the deadline passed first. */
async function waitFor(cond: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond().catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 10));
  }
  return false;
}

function bigBundle(): string {
  const streams: Record<string, string> = {};
  const rules: Record<string, string> = {};
  for (let i = 0; i < N; i++) {
    streams[`new_s${i}`] = `CREATE STREAM new_s${i} () WITH (DATASOURCE="crash/${i}", TYPE="memory")`;
    rules[`new_r${i}`] = JSON.stringify({
      id: `new_r${i}`,
      sql: `SELECT * FROM new_s${i}`,
      actions: [{ nop: {} }],
      triggered: false,
    });
  }
  return JSON.stringify({ content: JSON.stringify({ streams, rules }) });
}

async function seedOld(url: string): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const s = await fetch(`${url}/streams`, {
      method: 'POST',
      body: JSON.stringify({ sql: `CREATE STREAM old_s${i} () WITH (DATASOURCE="old/${i}", TYPE="memory")` }),
    });
    assert.equal(s.status, 201);
    const r = await fetch(`${url}/rules`, {
      method: 'POST',
      body: JSON.stringify({ id: `old_r${i}`, sql: `SELECT * FROM old_s${i}`, actions: [{ nop: {} }] }),
    });
    assert.equal(r.status, 201);
  }
}

export async function killDuringImport(store: Record<string, string>): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'eddy-crash-'));
  const body = bigBundle();
  let eddy = await startEddyProcess(home, store);
  try {
    await seedOld(eddy.url);
    // the moments of the kill: during the streams, during the rules, right after the request is sent
    const moments: Array<[string, (url: string) => Promise<boolean>]> = [
      [
        'streams',
        async (url) =>
          ((await getJson(`${url}/streams`)) as string[]).filter((n) => n.startsWith('new_')).length >= N / 4,
      ],
      [
        'rules',
        async (url) =>
          ((await getJson(`${url}/rules`)) as Array<{ id: string }>).filter((r) => r.id.startsWith('new_')).length >=
          N / 10,
      ],
      ['start', async () => true],
    ];
    for (const [moment, reached] of moments) {
      const importing = fetch(`${eddy.url}/data/import`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      }).catch(() => undefined);
      const hit = await waitFor(() => reached(eddy.url), 180_000);
      assert.ok(hit, `the import reached the ${moment} moment`);
      await eddy.kill9();
      await importing;
      eddy = await startEddyProcess(home, store);
      const streams = (await getJson(`${eddy.url}/streams`)) as string[];
      const rules = ((await getJson(`${eddy.url}/rules`)) as Array<{ id: string }>).map((r) => r.id);
      const old =
        streams.length === 3 &&
        rules.length === 3 &&
        streams.every((s) => s.startsWith('old_')) &&
        rules.every((r) => r.startsWith('old_'));
      const all =
        streams.length === N &&
        rules.length === N &&
        streams.every((s) => s.startsWith('new_')) &&
        rules.every((r) => r.startsWith('new_'));
      assert.ok(old || all, `after a kill at the ${moment} moment: ${streams.length} streams, ${rules.length} rules`);
      if (moment !== 'start') {
        // killed with part of the import applied: only the old data can be there
        assert.ok(old, `a kill during the ${moment} keeps the old data`);
        const status = (await getJson(`${eddy.url}/data/import/status`)) as { interrupted?: string };
        assert.match(String(status.interrupted), /was interrupted/);
      }
      if (all) break;
    }
    // an import that completes is kept whatever happens right after
    const done = await fetch(`${eddy.url}/data/import`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    assert.equal(done.status, 200, await done.clone().text());
    await done.text();
    await eddy.kill9();
    eddy = await startEddyProcess(home, store);
    assert.equal(((await getJson(`${eddy.url}/streams`)) as string[]).length, N);
    assert.equal(((await getJson(`${eddy.url}/rules`)) as unknown[]).length, N);
    const status = (await getJson(`${eddy.url}/data/import/status`)) as { interrupted?: string };
    assert.equal(status.interrupted, undefined, 'a completed import is not reported as interrupted');
  } finally {
    await eddy.kill9();
    rmSync(home, { recursive: true, force: true });
  }
}
