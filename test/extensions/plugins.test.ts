/**
 * Native plugin endpoints on a real server: lists, look-ups and deletes with eKuiper's statuses and texts (404 code
 * 1002 for missing plugins, docs/compatibility.md D1), create bodies checked like eKuiper's before anything is fetched
 * (installs themselves: plugins-native.test.ts),
 * the function-list registration call, the computed prebuilt-plugin catalogue, and the portable create's body
 * checks (portable plugins themselves: plugins-portable.test.ts).
 */
import { tmpdir } from 'node:os';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { prebuiltPlugins } from '../../src/extensions/plugins.js';

type J = Record<string, unknown>;
let s: TestServer;

before(async () => {
  s = await startTestServer();
});
after(async () => {
  await s.dispose();
});

function err(r: { status: number; json(): unknown }, status: number): J {
  assert.equal(r.status, status);
  return r.json() as J;
}

test('lists are empty JSON arrays', async () => {
  for (const p of ['/plugins/sources', '/plugins/sinks', '/plugins/functions', '/plugins/portables', '/plugins/udfs']) {
    const r = await s.req('GET', p);
    assert.equal(r.status, 200, p);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(r.json(), [], p);
  }
});

test('missing plugins and UDFs are 404 with code 1002 and eKuiper texts', async () => {
  for (const t of ['sources', 'sinks', 'functions']) {
    assert.deepEqual(err(await s.req('GET', `/plugins/${t}/random`), 404), {
      error: 1002,
      message: `describe ${t} plugin random error: not found`,
    });
    assert.deepEqual(err(await s.req('DELETE', `/plugins/${t}/random`), 404), {
      error: 1002,
      message: `delete ${t} plugin random error: invalid name random: not exist`,
    });
    assert.deepEqual(
      err(await s.req('PUT', `/plugins/${t}/random`, { name: 'random', file: 'https://h/random.zip' }), 404),
      {
        error: 1002,
        message: `update ${t} plugin random error, cannot delete old version: invalid name random: not exist`,
      },
    );
  }
  assert.deepEqual(err(await s.req('GET', '/plugins/portables/mirror'), 404), {
    error: 1002,
    message: 'describe portable plugin mirror error: not found',
  });
  assert.deepEqual(err(await s.req('DELETE', '/plugins/portables/mirror'), 404), {
    error: 1002,
    message: 'delete portable plugin mirror error: portable plugin mirror is not found',
  });
  assert.deepEqual(err(await s.req('GET', '/plugins/udfs/f9'), 404), {
    error: 1002,
    message: 'describe function f9 error: not found',
  });
});

test('create bodies are decoded and checked like eKuiper before the archive is fetched', async () => {
  const post = (path: string, body: unknown) => s.req('POST', path, body);
  let e = err(await post('/plugins/functions', '{"name": '), 400);
  assert.equal(e.error, 1000);
  assert.match(String(e.message), /^Invalid body: Error decoding the functions plugin json: /);
  e = err(await post('/plugins/sinks', { name: 'x', file: 'https://h/x.zip', shellParas: 'no' }), 400);
  assert.equal(
    e.message,
    'Invalid body: Error decoding the sinks plugin json: json: cannot unmarshal string into Go struct field IOPlugin.shellParas of type []string',
  );
  e = err(await post('/plugins/sources', { name: '  ', file: 'https://h/x.zip' }), 400);
  assert.equal(e.message, 'sources plugins create command error: invalid name : should not be empty');
  e = err(await post('/plugins/sources', { name: 'random', file: 'ftp://x/y.zip' }), 400);
  assert.equal(e.message, 'sources plugins create command error: invalid uri ftp://x/y.zip');
  e = err(await post('/plugins/sources', { name: 'random', file: 'https://h/random.tar' }), 400);
  assert.equal(e.message, 'sources plugins create command error: invalid uri https://h/random.tar');
  e = err(await post('/plugins/sources', { name: '../etc', file: 'https://h/random.zip' }), 400);
  assert.match(String(e.message), /^sources plugins create command error: invalid name \.\.\/etc/);
  e = err(await post('/plugins/functions', { name: 'geo', file: 'file:///opt/geo.zip', functions: ['f1'] }), 400);
  assert.match(
    String(e.message),
    /^functions plugins create command error: fail to download file file:\/\/\/opt\/geo\.zip: access to \/opt\/geo\.zip is denied/,
  );
  e = err(await post('/plugins/portables', { name: 'mirror', file: `file://${tmpdir()}/no/such/mirror.zip` }), 400);
  assert.equal(
    e.message,
    `portable plugin create command error: fail to download file file://${tmpdir()}/no/such/mirror.zip: stat ${tmpdir()}/no/such/mirror.zip: no such file or directory`,
  );
  e = err(await s.req('PUT', '/plugins/portables/mirror', { name: 'mirror', file: 'ftp://h/mirror.zip' }), 400);
  assert.equal(e.message, 'portable plugin update command error: invalid uri ftp://h/mirror.zip');
  e = err(await post('/plugins/portables', '[1]'), 400);
  assert.equal(
    e.message,
    'Invalid body: Error decoding the portable plugin json: json: cannot unmarshal array into Go value of type plugin.IOPlugin',
  );
  assert.deepEqual((await s.req('GET', '/plugins/functions')).json(), [], 'nothing was installed');
  assert.deepEqual((await s.req('GET', '/plugins/portables')).json(), []);
});

test('function-list registration: empty list 400, unknown plugin 404', async () => {
  let e = err(await s.req('POST', '/plugins/functions/geo/register', { functions: [] }), 400);
  assert.equal(e.message, "function plugins geo regiser functions error: property 'functions' must not be empty");
  e = err(await s.req('POST', '/plugins/functions/geo/register', { functions: ['f1'] }), 404);
  assert.deepEqual(e, { error: 1002, message: 'register functions plugin geo error: not found' });
  e = err(await s.req('POST', '/plugins/functions/geo/register', 'nope'), 400);
  assert.match(String(e.message), /^Invalid body: /);
});

test('prebuilt catalogue: URL per name from the configured hosts, OS flavour and Go architecture', async () => {
  if (process.platform === 'linux') {
    const r = await s.req('GET', '/plugins/sinks/prebuild');
    assert.equal(r.status, 200);
    const body = r.json() as Record<string, string>;
    assert.deepEqual(Object.keys(body), ['image', 'influx', 'influx2', 'tdengine', 'zmq', 'kafka', 'sql']);
    assert.match(
      body.influx,
      /^https:\/\/packages\.emqx\.net\/kuiper-plugins\/1\.14\.7\/(debian|alpine)\/sinks\/influx_[a-z0-9]+\.zip$/,
    );
  }
  const env = (pretty: string, platform = 'linux', arch = 'arm64') => ({
    platform,
    arch,
    osRelease: () => `NAME=x\nPRETTY_NAME="${pretty}"\n`,
  });
  assert.deepEqual(
    prebuiltPlugins('functions', ' https://a.example , https://b.example', '1.14.7', env('Alpine Linux v3.19')).echo,
    'https://b.example/kuiper-plugins/1.14.7/alpine/functions/echo_arm64.zip',
    'the last host wins',
  );
  assert.equal(
    prebuiltPlugins('sources', 'https://h', '1.14.7', env('Debian GNU/Linux 12', 'linux', 'x64')).random,
    'https://h/kuiper-plugins/1.14.7/debian/sources/random_amd64.zip',
  );
  assert.throws(
    () => prebuiltPlugins('sources', 'https://h', '1.14.7', env('x', 'darwin')),
    /strongly recommended to install plugins at linux/,
  );
  assert.throws(
    () => prebuiltPlugins('sources', ' , ', '1.14.7', env('x')),
    /invalid configuration for plugin host in kuiper.yaml/,
  );
  assert.throws(
    () =>
      prebuiltPlugins('sources', 'https://h', '1.14.7', {
        platform: 'linux',
        arch: 'x64',
        osRelease: () => {
          throw new Error('open /etc/os-release: no such file or directory');
        },
      }),
    /open \/etc\/os-release: no such file or directory/,
  );
});
