/**
 * The web console in a real headless Chromium (Debian's `chromium`, driven by playwright-core) against a real server
 * and Mosquitto: create a stream and a rule from the UI, watch the live metrics move while messages flow, stop the
 * rule, import a bundle, and time the first render of the rules page with 1,000 rules (printed, not asserted).
 * Screenshots go to test/output/console/ (git-ignored).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { generateKeyPairSync, sign } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import mqtt from 'mqtt';
import { startTestServer, type TestServer } from '../helpers/server.js';

// the functions passed to page.waitForFunction/evaluate run in the browser; the test is compiled without the DOM library
interface PageElement {
  textContent: string | null;
}
declare const document: {
  querySelector(sel: string): PageElement | null;
  querySelectorAll(sel: string): ArrayLike<PageElement>;
};

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const SHOTS = new URL('../output/console/', import.meta.url).pathname;
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let server: TestServer;
let context: BrowserContext;
let profile: string;

before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await startTestServer();
  profile = mkdtempSync(join(tmpdir(), 'eddy-chromium-'));
  // a new, empty profile (--user-data-dir) for every run
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    viewport: { width: 1280, height: 900 },
  });
});

after(async () => {
  await context?.close();
  await server?.dispose();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

async function open(hash: string): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  await page.goto(`${server.url}/console/${hash}`);
  return page;
}

test("the console is served by Eddy and the root keeps eKuiper's JSON answer", async () => {
  const root = await server.req('GET', '/');
  assert.match(root.headers.get('content-type') ?? '', /application\/json/);
  assert.ok('version' in (root.json() as object));
  const index = await fetch(`${server.url}/console/`);
  assert.equal(index.status, 200);
  assert.match(await index.text(), /<script type="module" src="app.js">/);
  // nothing outside the console folder is served
  for (const path of [
    '/console/../etc/kuiper.yaml',
    '/console/%2e%2e/package.json',
    '/console/..%2fpackage.json',
    '/console/nosuch.js',
  ]) {
    assert.notEqual((await fetch(`${server.url}${path}`, { redirect: 'manual' })).status, 200, path);
  }
});

test('create a stream and a rule in the UI, watch live metrics while MQTT messages flow, stop it', async () => {
  const name = `ui${process.pid}`;
  const topic = `eddy/console/${name}`;
  const page = await open('#/streams');
  const sql = page.locator('[data-role=sql]');
  await sql.fill(`CREATE STREAM ${name} (temperature FLOAT) WITH (DATASOURCE="${topic}", FORMAT="json"`);
  await page
    .locator('[data-role=sql-status] .error')
    .filter({ hasText: /line 1, column \d+/ })
    .waitFor();
  await page.screenshot({ path: join(SHOTS, 'stream-syntax-error.png'), fullPage: true });
  await sql.fill(`CREATE STREAM ${name} (temperature FLOAT) WITH (DATASOURCE="${topic}", FORMAT="json")`);
  await page.locator('[data-role=sql-status] .ok').waitFor();
  await page.locator('[data-role=create]').click();
  await page.locator(`tr[data-name=${name}]`).waitFor();
  await page.locator(`tr[data-name=${name}] a`).click();
  await page.locator('[data-role=describe]').filter({ hasText: 'temperature' }).waitFor();
  await page.screenshot({ path: join(SHOTS, 'streams.png'), fullPage: true });

  await page.goto(`${server.url}/console/#/rules/new`);
  await page.locator('[data-role=rule-id]').fill(name);
  await page.locator('[data-role=sql]').fill(`SELECT temperature FROM ${name} WHERE temperature > 20`);
  await page.locator('[data-role=rule-rest]').fill('{"actions":[{"nop":{}}]}');
  await page.locator('[data-role=validate]').click();
  await page.locator('[data-role=rule-result] .ok').waitFor();
  await page.locator('[data-role=save]').click();
  await page.waitForURL(new RegExp(`#/rules/${name}$`));
  await page.locator('[data-role=rule-status]').filter({ hasText: 'running' }).waitFor();
  const metrics = page.locator(`[data-node=source_${name}] [data-role=metrics]`);
  await metrics.filter({ hasText: 'in 0' }).waitFor();

  const client = await mqtt.connectAsync('mqtt://127.0.0.1:1883');
  try {
    const publishing = setInterval(() => void client.publishAsync(topic, JSON.stringify({ temperature: 25 })), 100);
    try {
      await page.waitForFunction((sel) => {
        const m = /in ([\d,]+)/.exec(document.querySelector(sel)?.textContent ?? '');
        return m !== null && Number(m[1].replace(/,/g, '')) >= 3;
      }, `[data-node=source_${name}] [data-role=metrics]`);
      const first = await metrics.textContent();
      // the numbers keep moving with the messages, refreshed every second
      await page.waitForFunction(([sel, before]) => document.querySelector(sel)?.textContent !== before, [
        `[data-node=source_${name}] [data-role=metrics]`,
        first,
      ] as const);
      await page.screenshot({ path: join(SHOTS, 'rule.png'), fullPage: true });
      await page.goto(`${server.url}/console/#/rules`);
      const row = page.locator(`tr[data-rule=${name}]`);
      await row.waitFor();
      await page.waitForFunction(
        (sel) => Number((document.querySelectorAll(`${sel} td.num`)[0]?.textContent ?? '0').replace(/,/g, '')) > 0,
        `tr[data-rule=${name}]`,
      );
      await page.screenshot({ path: join(SHOTS, 'rules.png'), fullPage: true });
      // a stop asks first (test/console/operator.test.ts covers the refusal)
      page.once('dialog', (d) => void d.accept());
      await row.getByRole('button', { name: 'Stop' }).click();
      await row.locator('.badge.stopped').waitFor();
    } finally {
      clearInterval(publishing);
    }
  } finally {
    await client.endAsync();
  }
  const st = (await server.req('GET', `/rules/${name}/status`)).json() as { status: string };
  assert.equal(st.status, 'stopped');
  await page.goto(`${server.url}/console/#/rules/${name}`);
  await page.locator('[data-role=trial]').click();
  // the trial-run endpoint is not on every server: the console says so instead of failing
  await page.locator('[data-role=trial-note]').filter({ hasText: /\S/ }).waitFor();
  await page.close();
});

test('import a bundle with progress; add a config key; the server page shows CPU and memory', async () => {
  const rules: Record<string, string> = {};
  for (let i = 0; i < 20; i++)
    rules[`uiimp${i}`] = JSON.stringify({
      id: `uiimp${i}`,
      sql: `SELECT * FROM uiimp WHERE a > ${i}`,
      actions: [{ nop: {} }],
    });
  const bundle = {
    streams: { uiimp: 'CREATE STREAM uiimp (a BIGINT) WITH (TYPE="memory", DATASOURCE="ui/imp", FORMAT="json")' },
    rules,
  };
  const page = await open('#/data');
  await page
    .locator('[data-role=import-file]')
    .setInputFiles({ name: 'bundle.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(bundle)) });
  await page.locator('[data-role=import]').click();
  await page.locator('[data-role=import-result] .ok').filter({ hasText: 'imported' }).waitFor();
  assert.equal(
    await page.locator('[data-role=import-progress]').evaluate((el) => {
      const bar = el as unknown as { value: number; max: number };
      return bar.value === bar.max && bar.max > 1;
    }),
    true,
  );
  await page.screenshot({ path: join(SHOTS, 'import.png'), fullPage: true });
  const listed = server.app.rules.list().filter((r) => r.id.startsWith('uiimp'));
  assert.equal(listed.length, 20);
  await page.goto(`${server.url}/console/#/config`);
  await page.locator('main select').nth(1).locator('option[value=mqtt]').waitFor({ state: 'attached' });
  await page.locator('main select').nth(1).selectOption('mqtt');
  await page.locator('[data-role=confkey-name]').fill('uikey');
  await page.locator('[data-role=confkey-props]').fill('{"server": "tcp://127.0.0.1:1883"}');
  await page.locator('[data-role=confkey-save]').click();
  await page
    .locator('main td')
    .filter({ hasText: /^uikey$/ })
    .waitFor();
  const keys = (await server.req('GET', '/metadata/sources/yaml/mqtt')).json() as Record<string, { server?: string }>;
  assert.equal(keys.uikey?.server, 'tcp://127.0.0.1:1883');
  await page.screenshot({ path: join(SHOTS, 'config.png'), fullPage: true });
  await page.goto(`${server.url}/console/#/server`);
  await page.locator('[data-role=server]').filter({ hasText: 'Memory (RSS)' }).waitFor();
  await page.screenshot({ path: join(SHOTS, 'server.png'), fullPage: true });
  await page.close();
});

test('the rules page with 1,000 rules: first render (figure printed)', async () => {
  const rules: Record<string, string> = {};
  for (let i = 0; i < 1000; i++)
    rules[`many${String(i).padStart(4, '0')}`] = JSON.stringify({
      sql: `SELECT * FROM uimany WHERE a > ${i}`,
      actions: [{ nop: {} }],
    });
  const res = await server.req('POST', '/data/import?partial=1', {
    content: JSON.stringify({
      streams: {
        uimany:
          'CREATE STREAM uimany (a BIGINT) WITH (TYPE="memory", DATASOURCE="ui/many", FORMAT="json", SHARED="true")',
      },
      rules,
    }),
  });
  assert.equal(res.status, 200, res.text);
  const page = await context.newPage();
  page.setDefaultTimeout(60_000);
  const t0 = Date.now();
  await page.goto(`${server.url}/console/#/rules`);
  await page.locator('[data-role=rules] tbody[data-rendered]').waitFor();
  const navToRows = Date.now() - t0;
  const inPage = await page.evaluate(
    () => (globalThis as unknown as { eddyRulesFirstRenderMs: number }).eddyRulesFirstRenderMs,
  );
  const rows = await page.locator('[data-role=rules] tbody tr').count();
  assert.equal(rows, 50, 'one page of rules is rendered');
  await page.screenshot({ path: join(SHOTS, 'rules-1000.png'), fullPage: true });
  console.log(
    `# console: rules page with ${((await server.req('GET', '/eddy/rules?limit=1')).json() as { total: number }).total} rules: first rows ${navToRows} ms after navigation, ${Math.round(inPage)} ms after the page script started`,
  );
  await page.close();
});

test('with authentication on, the console asks for a token and uses it', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-console-auth-'));
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  mkdirSync(join(home, 'etc', 'mgmt'), { recursive: true });
  writeFileSync(join(home, 'etc', 'mgmt', 'console.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
  const secured = await startTestServer({ home, env: { KUIPER__BASIC__AUTHENTICATION: 'true' } });
  try {
    await secured.req('GET', '/ping');
    const enc = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const head = `${enc({ alg: 'RS256', typ: 'JWT' })}.${enc({ iss: 'console.pub', aud: ['eKuiper'], exp: Math.floor(Date.now() / 1000) + 600 })}`;
    const token = `${head}.${sign('RSA-SHA256', Buffer.from(head), privateKey).toString('base64url')}`;
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    await page.goto(`${secured.url}/console/#/streams`);
    await page.locator('#login[open]').waitFor();
    await page.locator('#login-token').fill(token);
    await page.locator('#login-save').click();
    await page.locator('main h1').filter({ hasText: 'Streams' }).waitFor();
    await page.locator('main td.muted').filter({ hasText: 'no streams yet' }).waitFor();
    await page.close();
  } finally {
    await secured.dispose();
  }
});

test('in cluster mode the console shows the nodes and where each rule runs', async () => {
  const name = `ui${process.pid}${Date.now().toString(36)}`;
  const node = await startTestServer({
    env: {
      KUIPER__CLUSTER__BACKEND: 'redis',
      KUIPER__CLUSTER__NAME: name,
      KUIPER__CLUSTER__NODEID: 'ui-node',
      KUIPER__CLUSTER__LEASETIMEOUT: '2000',
    },
  });
  try {
    let r = await node.req('POST', '/streams', {
      sql: 'CREATE STREAM uicl () WITH (TYPE="memory", DATASOURCE="ui/cl")',
    });
    assert.equal(r.status, 201, r.text);
    r = await node.req('POST', '/rules', { id: 'uicl1', sql: 'SELECT * FROM uicl', actions: [{ nop: {} }] });
    assert.equal(r.status, 201, r.text);
    const page = await context.newPage();
    page.setDefaultTimeout(60_000);
    await page.goto(`${node.url}/console/#/rules`);
    await page.locator('[data-rule=uicl1] [data-role=rule-node]').filter({ hasText: 'ui-node' }).waitFor();
    assert.equal(await page.locator('th', { hasText: 'Node' }).isVisible(), true);
    await page.locator('nav a[data-cluster]').waitFor({ state: 'visible' });
    await page.goto(`${node.url}/console/#/cluster`);
    const row = page.locator('[data-role=cluster] [data-node=ui-node]');
    await row.filter({ hasText: 'alive' }).filter({ hasText: 'uicl1' }).waitFor();
    await page.screenshot({ path: join(SHOTS, 'cluster.png'), fullPage: true });
    await page.close();
  } finally {
    await node.dispose();
    const { Redis } = await import('ioredis');
    const redis = new Redis({ host: '127.0.0.1', port: 6379 });
    const keys = await redis.keys(`${name}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  }
});
