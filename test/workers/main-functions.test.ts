/**
 * Rules calling external-service functions and portable-plugin functions run on the rule workers
 * (docs/runtime.md §1.10): each call crosses to the main thread, which holds the service clients and the plugin
 * process, and its answer (or its error, with the text the main thread gives) crosses back to the rule's asynchronous
 * node.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { ArchiveDir, HELLO_PROTO, startServices, type Services } from '../extensions/services-fixture.js';
import { pluginZip } from '../extensions/portable-fixture.js';
import type { ValueObject } from '../../src/values/index.js';
import { status } from './helpers.js';

let svc: Services;
let zips: ArchiveDir;
let dir: string;

before(async () => {
  svc = await startServices();
  zips = new ArchiveDir();
  dir = mkdtempSync(join(tmpdir(), 'eddy-mainfn-'));
});

after(async () => {
  await svc.stop();
  zips.dispose();
  rmSync(dir, { recursive: true, force: true });
});

/** Creates rule `id` selecting `select` from a memory stream; the first row it gives for `row`, once it runs. */
async function firstRow(s: TestServer, id: string, select: string, row: ValueObject): Promise<ValueObject> {
  let r = await s.req('POST', '/streams', {
    sql: `CREATE STREAM in_${id} () WITH (DATASOURCE="${id}/in", FORMAT="json", TYPE="memory")`,
  });
  assert.equal(r.status, 201, r.text);
  const out: ValueObject[] = [];
  const close = s.app.connectors.memory.subscribe(`${id}/out`, (m) => out.push(m.row));
  try {
    r = await s.req('POST', '/rules', {
      id,
      sql: `SELECT ${select} FROM in_${id}`,
      actions: [{ memory: { topic: `${id}/out` } }],
    });
    assert.equal(r.status, 201, r.text);
    const st = await status(s, id);
    assert.equal(st.worker, s.app.workers?.place(id), `${id} runs on its worker: ${JSON.stringify(st)}`);
    const end = Date.now() + 30_000;
    while (out.length === 0) {
      assert.ok(Date.now() < end, `a row of ${select}`);
      s.app.connectors.memory.publish({ topic: `${id}/in`, row });
      await new Promise((res) => setTimeout(res, 100));
    }
    return out[0];
  } finally {
    close();
  }
}

test('service and portable-plugin functions are called from rules on the workers', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  try {
    const def = {
      interfaces: {
        greeter: {
          address: svc.restUrl,
          protocol: 'rest',
          schemaType: 'protobuf',
          schemaFile: 'hello.proto',
          functions: [{ name: 'greet', serviceName: 'SayHello' }],
        },
      },
    };
    const file = zips.zip({ ['wsvc.json']: JSON.stringify(def), ['schemas/hello.proto']: HELLO_PROTO });
    let r = await s.req('POST', '/services', { name: 'wsvc', file });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(await firstRow(s, 'svcrule', 'greet(who, 3) AS g', { who: 'bob' }), {
      g: { message: 'POST bob x3 keys=times' },
    });
    // int64 values cross the threads as they are
    assert.deepEqual(
      await firstRow(s, 'echorule', 'Echo(obj) AS e', {
        obj: { user_name: 'ann', big: 9007199254740993n, ratio: 0.5, tags: ['a'] },
      }),
      { e: { user_name: 'ann', big: 9007199254740993n, ratio: 0.5, tags: ['a'], count: 7n } },
    );
    // the main thread's error text reaches the rule
    const failed = await firstRow(s, 'failrule', 'Fail(a, 1) AS f', { a: 'x' });
    assert.match(
      String(failed.error),
      /call func Fail error: http call to .*\/Fail failed with status 500: backend exploded/,
    );

    const zip = join(dir, 'mirror.zip');
    writeFileSync(zip, pluginZip({ name: 'wmirror', sources: [], sinks: [], functions: ['wrevert'] }));
    r = await s.req('POST', '/plugins/portables', { name: 'wmirror', file: pathToFileURL(zip).href });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(await firstRow(s, 'portrule', 'wrevert(ds) AS rev', { ds: 'abc' }), { rev: 'cba' });
  } finally {
    await s.dispose();
  }
});
