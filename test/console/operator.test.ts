/**
 * The console shows why (issue 25 item 3), in a real headless Chromium against a real server and Mosquitto: a rule's
 * state and stop reason, a degraded rule's reason, node exceptions on the topology, the live tail and the traces,
 * confirmations, partial import by default and a full import that lists what it removes, per-item failures, stream
 * edit, state-aware buttons, empty states, and tables that fit 1280 px and a phone. Screenshots go to
 * test/output/console/ (git-ignored).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import mqtt from 'mqtt';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { freePort } from '../helpers/process.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = new URL('../output/console/', import.meta.url).pathname;
const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'];

let server: TestServer;
let context: BrowserContext;
let profile: string;
let client: mqtt.MqttClient;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  // rules on a worker thread, as by default (docs/runtime.md §1.10)
  server = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  profile = mkdtempSync(join(tmpdir(), 'eddy-chromium-'));
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 900 },
  });
  client = await mqtt.connectAsync('mqtt://127.0.0.1:1883');
});

after(async () => {
  await client?.endAsync();
  await context?.close();
  await server?.dispose();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function open(hash: string, viewport?: { width: number; height: number }): Promise<Page> {
  const page = await context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  page.setDefaultTimeout(60_000);
  await page.goto(`${server.url}/console/${hash}`);
  return page;
}

async function ok(method: string, path: string, body?: unknown): Promise<string> {
  const r = await server.req(method, path, body);
  assert.ok(r.status >= 200 && r.status < 300, `${method} ${path}: ${r.status} ${r.text}`);
  return r.text;
}

/** An MQTT stream and a rule reading it; returns the topic. */
async function mqttRule(id: string, sql: (stream: string) => string, server_ = 'tcp://127.0.0.1:1883') {
  const topic = `eddy/console/${id}/${Date.now()}`;
  await ok('PUT', `/metadata/sources/mqtt/confKeys/k_${id}`, { server: server_ });
  await ok('POST', '/streams', {
    sql: `CREATE STREAM s_${id} () WITH (DATASOURCE="${topic}", FORMAT="json", CONF_KEY="k_${id}")`,
  });
  await ok('POST', '/rules', { id, sql: sql(`s_${id}`), actions: [{ nop: {} }] });
  return topic;
}

/** Publishes `msg` every 300 ms until `until` resolves. */
async function publishing<T>(topic: string, msg: unknown, until: Promise<T>): Promise<T> {
  let done = false;
  const loop = (async () => {
    while (!done) {
      await client.publishAsync(topic, JSON.stringify(msg), { qos: 1 });
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  try {
    return await until;
  } finally {
    done = true;
    await loop;
  }
}

test('empty states: a new server says what to do first', async () => {
  const page = await open('#/rules');
  await page.locator('[data-role=empty]').filter({ hasText: 'No rules yet' }).waitFor();
  await page.locator('[data-role=empty] a[href="#/rules/new"]').waitFor();
  await page.goto(`${server.url}/console/#/streams`);
  await page.locator('[data-role=empty]').filter({ hasText: 'no streams yet' }).waitFor();
  await page.screenshot({ path: join(SHOTS, 'empty.png'), fullPage: true });
  await page.close();
});

test('a degraded rule says why; a manual stop is grey with its reason; buttons follow the state', async () => {
  const closed = await freePort();
  await mqttRule('uidown', (s) => `SELECT * FROM ${s}`, `tcp://127.0.0.1:${closed}`);
  const page = await open('#/rules/uidown');
  await page.locator('[data-role=rule-status].degraded').filter({ hasText: 'degraded' }).waitFor();
  await page
    .locator('[data-role=state-reason]')
    .filter({ hasText: /source_s_uidown: disconnected: .*ECONNREFUSED/ })
    .waitFor();
  // the source node is marked on the topology
  await page.locator('[data-node=source_s_uidown].disconnected').waitFor();
  assert.equal(await page.locator('[data-role=start]').isDisabled(), true, 'a running rule cannot be started');
  await page.screenshot({ path: join(SHOTS, 'rule-degraded.png'), fullPage: true });
  // a stop asks first: refused, nothing happens
  page.once('dialog', (d) => void d.dismiss());
  await page.locator('[data-role=stop]').click();
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(((await server.req('GET', '/rules/uidown/status')).json() as { status: string }).status, 'running');
  page.once('dialog', (d) => {
    assert.match(d.message(), /Stop rule uidown\?/);
    void d.accept();
  });
  await page.locator('[data-role=stop]').click();
  await page.locator('[data-role=rule-status].stopped').filter({ hasText: 'stopped' }).waitFor();
  await page.locator('[data-role=stop-reason]').filter({ hasText: 'Stopped: canceled manually.' }).waitFor();
  assert.equal(await page.locator('[data-role=stop]').isDisabled(), true, 'a stopped rule cannot be stopped');
  assert.equal(await page.locator('[data-role=start]').isDisabled(), false);
  // the list shows the same: grey, the reason under the badge, Start offered and Stop not
  await page.goto(`${server.url}/console/#/rules`);
  const row = page.locator('tr[data-rule=uidown]');
  await row.locator('.badge.stopped').waitFor();
  await row.locator('[data-role=rule-reason]').filter({ hasText: 'canceled manually.' }).waitFor();
  assert.equal(await row.getByRole('button', { name: 'Stop', exact: true }).isDisabled(), true);
  assert.equal(await row.getByRole('button', { name: 'Start', exact: true }).isDisabled(), false);
  // delete asks first: refused, the rule stays
  page.once('dialog', (d) => void d.dismiss());
  await row.getByRole('button', { name: 'Delete', exact: true }).click();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await server.req('GET', '/rules/uidown')).status, 200);
  await page.close();
});

test('node exceptions and the last error show on the topology; the live tail and the traces show the records', async () => {
  const topic = await mqttRule('uierr', (s) => `SELECT a, 10 / a AS b FROM ${s} WHERE a >= 0`);
  const page = await open('#/rules/uierr');
  await page.locator('[data-role=rule-status]').filter({ hasText: 'running' }).waitFor();
  // a division by zero at the projection: counted on its node, shown on the graph and in the list of problems
  await publishing(
    topic,
    { a: 0 },
    page
      .locator('[data-role=node-problems] [data-problem=op_4_project]')
      .filter({ hasText: 'divided by zero' })
      .waitFor(),
  );
  await page.locator('[data-node=op_4_project].has-error').waitFor();
  await page.locator('[data-role=last-error]').filter({ hasText: 'divided by zero' }).waitFor();
  // the live tail: what the source read and what reached the sink
  await page.locator('[data-role=tail]').click();
  await publishing(
    topic,
    { a: 5 },
    page.locator('[data-role=tail-output]').filter({ hasText: '{"a":5,"b":2}' }).waitFor(),
  );
  await page.locator('[data-role=tail-input]').filter({ hasText: '{"a":5}' }).waitFor();
  // a trace opened from the list names every node with its values
  await page.locator('[data-role=traces] a').first().click();
  const spans = page.locator('[data-role=trace-spans]');
  await spans.waitFor();
  for (const n of ['source_s_uierr', 'op_2_decoder', 'op_3_filter', 'op_4_project'])
    await spans.locator(`[data-span=${n}]`).waitFor();
  await page.screenshot({ path: join(SHOTS, 'rule-tail.png'), fullPage: true });
  await page.locator('[data-role=tail]').click();
  await page.close();
});

test('import: partial by default; a full import lists what it removes and waits; failures are a readable list', async () => {
  await ok('POST', '/streams', { sql: 'CREATE STREAM uikeep (a BIGINT) WITH (TYPE="memory", DATASOURCE="ui/keep")' });
  const page = await open('#/data');
  assert.equal(await page.locator('[data-role=import-partial]').isChecked(), true, 'partial by default');
  const bundle = {
    streams: { uinew: 'CREATE STREAM uinew (a BIGINT) WITH (TYPE="memory", DATASOURCE="ui/new")' },
    rules: {
      uibad: JSON.stringify({ id: 'uibad', sql: 'SELECT * FROM nosuchstream', actions: [{ nop: {} }] }),
    },
  };
  const file = { name: 'b.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(bundle)) };
  await page.locator('[data-role=import-file]').setInputFiles(file);
  await page.locator('[data-role=import]').click();
  // partial: the good item applied, the bad one listed with its reason
  await page
    .locator('[data-role=import-failures] li')
    .filter({ hasText: /rules uibad: .*nosuchstream/ })
    .waitFor();
  assert.equal((await server.req('GET', '/streams/uinew')).status, 200);
  assert.equal((await server.req('GET', '/streams/uikeep')).status, 200, 'a partial import removes nothing');
  // full: the removals are listed before anything happens; cancel keeps everything
  await page.locator('[data-role=import-partial]').uncheck();
  await page.locator('[data-role=import]').click();
  const removals = page.locator('[data-role=import-removals]');
  await removals.filter({ hasText: 'stream uikeep' }).waitFor();
  assert.match((await removals.textContent()) ?? '', /rule uidown/);
  await page.screenshot({ path: join(SHOTS, 'import-full.png'), fullPage: true });
  await page.locator('[data-role=import-confirm-no]').click();
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await server.req('GET', '/streams/uikeep')).status, 200, 'cancelled: nothing removed');
  await page.close();
});

test('a stream is edited in place', async () => {
  await ok('POST', '/streams', { sql: 'CREATE STREAM uiedit (a BIGINT) WITH (TYPE="memory", DATASOURCE="ui/edit")' });
  const page = await open('#/streams');
  await page.locator('tr[data-name=uiedit] [data-role=edit]').click();
  const sql = page.locator('[data-role=sql]');
  await page.waitForFunction(() => true);
  assert.match(await sql.inputValue(), /CREATE STREAM uiedit \(a BIGINT\)/);
  await sql.fill('CREATE STREAM uiedit (a BIGINT, added STRING) WITH (TYPE="memory", DATASOURCE="ui/edit")');
  await page.locator('[data-role=create]').filter({ hasText: 'Save stream uiedit' }).click();
  await page.locator('[data-role=describe]').filter({ hasText: 'added' }).waitFor();
  const d = (await server.req('GET', '/streams/uiedit')).json() as { StreamFields: Array<{ Name: string }> };
  assert.deepEqual(
    d.StreamFields.map((f) => f.Name),
    ['a', 'added'],
  );
  await page.close();
});

test('the rules table fits 1280 px and a phone', async () => {
  const long = `uiwide_${'x'.repeat(120)}`;
  await ok('POST', '/streams', { sql: 'CREATE STREAM uiwide (a BIGINT) WITH (TYPE="memory", DATASOURCE="ui/wide")' });
  await ok('POST', '/rules', { id: long, sql: 'SELECT * FROM uiwide', actions: [{ nop: {} }] });
  for (const viewport of [
    { width: 1280, height: 900 },
    { width: 390, height: 844 },
  ]) {
    const page = await open('#/rules', viewport);
    await page.locator(`tr[data-rule="${long}"]`).waitFor();
    const width = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
          .scrollWidth,
    );
    assert.ok(width <= viewport.width, `the page is ${width} px wide in a ${viewport.width} px window`);
    await page.screenshot({ path: join(SHOTS, `rules-${viewport.width}.png`), fullPage: true });
    await page.goto(`${server.url}/console/#/rules/${long}`);
    await page.locator('[data-role=rule-status]').waitFor();
    const ruleWidth = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
          .scrollWidth,
    );
    assert.ok(ruleWidth <= viewport.width, `the rule page is ${ruleWidth} px wide in a ${viewport.width} px window`);
    await page.close();
  }
});
