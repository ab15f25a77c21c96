/**
 * Asynchronous imports: unique task ids, status documents, cancellation, and tasks that survive a restart.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';
import { call, ok, uid, until } from './helpers.js';

interface Task {
  id: string;
  status: string;
  message: string;
  createdTimestamp: number;
  updatedTimestamp: number;
}

function bundleOf(n: number, prefix: string): string {
  const streams: Record<string, string> = {};
  for (let i = 0; i < n; i++)
    streams[`${prefix}${i}`] = `CREATE STREAM ${prefix}${i} (a BIGINT) WITH (DATASOURCE="async/${prefix}/${i}")`;
  return JSON.stringify({ streams });
}

test('async import: unique ids, task status finish with the import result, error with the failing items', async () => {
  const s = await startTestServer();
  try {
    const prefix = uid('as');
    const [a, b] = await Promise.all([
      ok(s, 'POST', '/async/data/import?partial=1', { content: bundleOf(3, prefix) }),
      ok(s, 'POST', '/async/data/import?partial=1', { content: bundleOf(3, `${prefix}b`) }),
    ]);
    const idA = a.json().id as string;
    const idB = b.json().id as string;
    assert.match(idA, /^dataImport-\d+-\d+$/);
    assert.notEqual(idA, idB);

    const done = await until('task to finish', async () => {
      const t = (await ok(s, 'GET', `/async/task/${idA}`)).json() as Task;
      return t.status === 'finish' ? t : undefined;
    });
    assert.deepEqual(JSON.parse(done.message).ErrorMsg, '');
    assert.equal(typeof done.createdTimestamp, 'number');
    assert.ok(done.updatedTimestamp >= done.createdTimestamp);
    // exactly eKuiper's record (docs/rest-api.md §7.6)
    assert.deepEqual(Object.keys(done), ['id', 'status', 'message', 'createdTimestamp', 'updatedTimestamp']);
    assert.deepEqual(JSON.parse(done.message), {
      ErrorMsg: '',
      ConfigResponse: Object.fromEntries(
        [
          'streams',
          'tables',
          'rules',
          'nativePlugins',
          'portablePlugins',
          'sourceConfig',
          'sinkConfig',
          'connectionConfig',
          'Service',
          'Schema',
          'uploads',
          'scripts',
        ].map((k) => [k, {}]),
      ),
    });
    const streams = (await ok(s, 'GET', '/streams')).json() as string[];
    for (let i = 0; i < 3; i++) assert.ok(streams.includes(`${prefix}${i}`));

    // content/file checks run inside the task
    const empty = (await ok(s, 'POST', '/async/data/import', {})).json().id as string;
    const failed = await until('task to fail', async () => {
      const t = (await ok(s, 'GET', `/async/task/${empty}`)).json() as Task;
      return t.status === 'error' ? t : undefined;
    });
    assert.equal(failed.message, 'Invalid body: must specify content or file');

    const bad = (
      await ok(s, 'POST', '/async/data/import?partial=1', {
        content: JSON.stringify({ rules: { x: '{"sql":"SELECT * FROM nope","actions":[{"log":{}}]}' } }),
      })
    ).json().id;
    const itemFailure = await until('task to fail', async () => {
      const t = (await ok(s, 'GET', `/async/task/${bad}`)).json() as Task;
      return t.status === 'error' ? t : undefined;
    });
    assert.match(JSON.parse(itemFailure.message).rules.x, /nope/);

    const notJson = await call(s, 'POST', '/async/data/import', '{"content":');
    assert.equal(notJson.status, 400);
    assert.match(notJson.json().message, /^Invalid body: Error decoding json: /);

    const unknown = await call(s, 'GET', '/async/task/dataImport-1-1');
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.json(), { error: 1002, message: 'async task: dataImport-1-1 not found' });
    assert.equal((await call(s, 'POST', '/async/task/nosuch/cancel')).status, 404);
  } finally {
    await s.dispose();
  }
});

test('cancelling a full async import restores the previous data; the status stays cancel', async () => {
  const s = await startTestServer();
  try {
    const keep = uid('keep');
    await ok(s, 'POST', '/streams', { sql: `CREATE STREAM ${keep} () WITH (DATASOURCE="k/${keep}")` });
    const prefix = uid('many');
    const id = (await ok(s, 'POST', '/async/data/import', { content: bundleOf(2000, prefix) })).json().id as string;
    const c = await ok(s, 'POST', `/async/task/${id}/cancel`);
    assert.equal(c.text, 'cancel success');
    const t = await until('task to end', async () => {
      const r = (await ok(s, 'GET', `/async/task/${id}`)).json() as Task;
      return r.status === 'register' || r.status === 'running' ? undefined : r;
    });
    assert.equal(t.status, 'cancel');
    const streams = (await ok(s, 'GET', '/streams')).json() as string[];
    assert.deepEqual(streams, [keep]);
    // cancel is final: asking again changes nothing
    await ok(s, 'POST', `/async/task/${id}/cancel`);
    assert.equal(((await ok(s, 'GET', `/async/task/${id}`)).json() as Task).status, 'cancel');
  } finally {
    await s.dispose();
  }
});

test('task records survive a restart; a task cut by the shutdown ends as cancel', async () => {
  const s = await startTestServer();
  const home = s.homeDir;
  const prefix = uid('rs');
  const quick = (await ok(s, 'POST', '/async/data/import?partial=1', { content: bundleOf(1, prefix) })).json()
    .id as string;
  await until('quick task', async () =>
    ((await ok(s, 'GET', `/async/task/${quick}`)).json() as Task).status === 'finish' ? true : undefined,
  );
  const slow = (await ok(s, 'POST', '/async/data/import?partial=1', { content: bundleOf(2000, `${prefix}x`) })).json()
    .id as string;
  await s.stop();
  const again = await startTestServer({ home });
  try {
    assert.equal(((await ok(again, 'GET', `/async/task/${quick}`)).json() as Task).status, 'finish');
    assert.equal(((await ok(again, 'GET', `/async/task/${slow}`)).json() as Task).status, 'cancel');
  } finally {
    await again.dispose();
  }
});
