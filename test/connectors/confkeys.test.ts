import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer } from '../helpers/server.js';

test('mqtt config keys: shipped default, PUT in both body shapes, GET merged with masking, DELETE', async () => {
  const s = await startTestServer();
  try {
    const first = await s.req('GET', '/metadata/sources/yaml/mqtt');
    assert.equal(first.status, 200);
    assert.deepEqual(first.json(), {
      default: { insecureSkipVerify: false, protocolVersion: '3.1.1', qos: 1, server: 'tcp://127.0.0.1:1883' },
    });

    const wrapped = await s.req('PUT', '/metadata/sources/mqtt/confKeys/plant2', {
      plant2: { server: 'tcp://10.0.0.7:1883', qos: 0, username: 'ops', password: 'pw' },
    });
    assert.equal(wrapped.status, 200);
    assert.equal(wrapped.text, '');
    const flat = await s.req('PUT', '/metadata/sources/mqtt/confKeys/flat1', { server: 'tcp://h:1883', token: 'tk' });
    assert.equal(flat.status, 200);

    const got = await s.req('GET', '/metadata/sources/yaml/mqtt');
    assert.equal(got.text.indexOf('"default"') < got.text.indexOf('"flat1"'), true, 'keys sorted');
    assert.deepEqual((got.json() as Record<string, unknown>).plant2, {
      password: '******',
      qos: 0,
      server: 'tcp://10.0.0.7:1883',
      username: 'ops',
    });
    assert.deepEqual((got.json() as Record<string, unknown>).flat1, { server: 'tcp://h:1883', token: '******' });

    // the user layer is a YAML file in the data folder holding the real secret
    const file = readFileSync(join(s.homeDir, 'data', 'sources', 'mqtt.yaml'), 'utf8');
    assert.match(file, /password: pw/);

    // writing back the masked value keeps the stored one
    assert.equal(
      (
        await s.req('PUT', '/metadata/sources/mqtt/confKeys/plant2', {
          server: 'tcp://10.0.0.8:1883',
          password: '******',
        })
      ).status,
      200,
    );
    assert.match(readFileSync(join(s.homeDir, 'data', 'sources', 'mqtt.yaml'), 'utf8'), /password: pw/);
    assert.equal(s.app.connectors.confKeys.sourceProps('mqtt', 'plant2').password, 'pw');
    // resolution: default overlaid with the key
    assert.deepEqual(s.app.connectors.registry.sourceProps('mqtt', 'plant2'), {
      qos: 1,
      server: 'tcp://10.0.0.8:1883',
      protocolVersion: '3.1.1',
      insecureSkipVerify: false,
      password: 'pw',
    });

    assert.equal((await s.req('DELETE', '/metadata/sources/mqtt/confKeys/plant2')).status, 200);
    assert.equal((await s.req('DELETE', '/metadata/sources/mqtt/confKeys/nothere')).status, 200);
    // a default key cannot be deleted: 200 but still there
    assert.equal((await s.req('DELETE', '/metadata/sources/mqtt/confKeys/default')).status, 200);
    const after = (await s.req('GET', '/metadata/sources/yaml/mqtt')).json() as Record<string, unknown>;
    assert.deepEqual(Object.keys(after), ['default', 'flat1']);
  } finally {
    await s.dispose();
  }
});

test('config keys survive a restart and URL passwords are masked and restored', async () => {
  const s = await startTestServer();
  const home = s.homeDir;
  try {
    const url = 'mysql://app:s3cret@db:3306/x';
    assert.equal((await s.req('PUT', '/metadata/sources/sql/confKeys/db1', { url, interval: 1000 })).status, 200);
    const got = (await s.req('GET', '/metadata/sources/yaml/sql')).json() as Record<string, Record<string, unknown>>;
    assert.equal(got.db1.url, 'mysql://app:******@db:3306/x');
    assert.equal(
      (await s.req('PUT', '/metadata/sources/sql/confKeys/db1', { url: got.db1.url, interval: 2000 })).status,
      200,
    );
    await s.stop();
    const again = await startTestServer({ home });
    try {
      assert.equal(again.app.connectors.confKeys.sourceProps('sql', 'db1').url, url);
      assert.equal(again.app.connectors.confKeys.sourceProps('sql', 'db1').interval, 2000);
    } finally {
      await again.dispose();
    }
  } finally {
    await s.dispose();
  }
});

test('sink and connection config keys; a sink action resolves its resourceId', async () => {
  const s = await startTestServer();
  try {
    assert.equal(
      (await s.req('PUT', '/metadata/sinks/mqtt/confKeys/out1', { server: 'tcp://127.0.0.1:1883', password: 'x' }))
        .status,
      200,
    );
    assert.deepEqual((await s.req('GET', '/metadata/sinks/yaml/mqtt')).json(), {
      out1: { password: '******', server: 'tcp://127.0.0.1:1883' },
    });
    assert.equal(s.app.connectors.registry.sinkProps('mqtt', 'out1').password, 'x');
    const conns = (await s.req('GET', '/metadata/connections/yaml/mqtt')).json() as Record<string, unknown>;
    assert.ok('localconnection' in conns, 'etc key names are lower-cased');
    assert.equal(s.app.connectors.confKeys.connectionProps('mqtt', 'localConnection')?.server, 'tcp://127.0.0.1:1883');
    assert.equal(
      (await s.req('PUT', '/metadata/connections/mqtt/confKeys/c1', { server: 'tcp://127.0.0.1:1883' })).status,
      200,
    );
    assert.deepEqual(s.app.connectors.confKeys.connectionProps('mqtt', 'c1'), { server: 'tcp://127.0.0.1:1883' });
    assert.match(readFileSync(join(s.homeDir, 'data', 'connections', 'connection.yaml'), 'utf8'), /c1:/);
  } finally {
    await s.dispose();
  }
});

test('config key errors: unknown type 404 with the plugin text, malformed body 5000', async () => {
  const s = await startTestServer();
  try {
    const unknown = await s.req('GET', '/metadata/sources/yaml/nosuchsource');
    assert.equal(unknown.status, 404);
    assert.deepEqual(unknown.json(), { error: 1002, message: 'This plugin was not found:sources.nosuchsource' });
    const del = await s.req('DELETE', '/metadata/sinks/nosuchsink/confKeys/a');
    assert.equal(del.status, 404);
    const bad = await s.req('PUT', '/metadata/sources/mqtt/confKeys/k', '{"server": ');
    assert.equal(bad.status, 400);
    const body = bad.json() as { error: number; message: string };
    assert.equal(body.error, 5000);
    assert.match(body.message, /^Type conversion failed:mqtt\./);
    const arr = await s.req('PUT', '/metadata/sources/mqtt/confKeys/k', '[1]');
    assert.equal(arr.status, 400);
    // names become file names: path tricks are refused and nothing is written
    // (an encoded slash separates path segments, so the router itself refuses this one)
    const trick = await s.req('PUT', '/metadata/sources/..%2F..%2Fetc%2Fx/confKeys/k', { a: 1 });
    assert.ok([301, 400, 404].includes(trick.status), `refused, got ${trick.status}`);
    const dots = await s.req('PUT', '/metadata/sources/.%2E/confKeys/k', { a: 1 });
    assert.notEqual(dots.status, 200);
    // PUT works for any name; afterwards GET knows it
    assert.equal((await s.req('PUT', '/metadata/sources/myplugin/confKeys/k', { a: 1 })).status, 200);
    assert.deepEqual((await s.req('GET', '/metadata/sources/yaml/myplugin')).json(), { k: { a: 1 } });
  } finally {
    await s.dispose();
  }
});

test('env overrides apply to the shipped defaults', async () => {
  const s = await startTestServer({
    env: { MQTT_SOURCE__DEFAULT__SERVER: 'tcp://broker:1883', MQTT_SOURCE__DEFAULT__QOS: '2' },
  });
  try {
    const got = (await s.req('GET', '/metadata/sources/yaml/mqtt')).json() as Record<string, Record<string, unknown>>;
    assert.equal(got.default.server, 'tcp://broker:1883');
    assert.equal(got.default.qos, 2);
  } finally {
    await s.dispose();
  }
});

test('cfgStorageType kv keeps the user layer in the store (confKVStorage), not in files', async () => {
  const env = { KUIPER__BASIC__CFGSTORAGETYPE: 'kv' };
  const s = await startTestServer({ env });
  const home = s.homeDir;
  try {
    assert.equal(
      (await s.req('PUT', '/metadata/sources/mqtt/confKeys/kv1', { server: 'tcp://k:1883', password: 'p' })).status,
      200,
    );
    assert.equal((await s.req('PUT', '/metadata/sinks/rest/confKeys/r1', { url: 'http://x' })).status, 200);
    assert.equal(
      await s.app.store.get('confKVStorage', 'sources.mqtt.kv1'),
      '{"server":"tcp://k:1883","password":"p"}',
    );
    assert.throws(() => readFileSync(join(home, 'data', 'sources', 'mqtt.yaml'), 'utf8'));
    await s.stop();
    const again = await startTestServer({ home, env });
    try {
      const got = (await again.req('GET', '/metadata/sources/yaml/mqtt')).json() as Record<string, unknown>;
      assert.deepEqual(got.kv1, { password: '******', server: 'tcp://k:1883' });
      assert.equal((await again.req('DELETE', '/metadata/sources/mqtt/confKeys/kv1')).status, 200);
      assert.equal(await again.app.store.get('confKVStorage', 'sources.mqtt.kv1'), undefined);
      assert.deepEqual(again.app.connectors.registry.sinkProps('rest', 'r1'), { url: 'http://x' });
    } finally {
      await again.dispose();
    }
  } finally {
    await s.dispose();
  }
});

test('sink config keys of rest, websocket, redisPub and redis are validated on PUT (400 code 5000); others accept anything', async () => {
  const s = await startTestServer();
  try {
    const put = (type: string, props: Record<string, unknown>) =>
      s.req('PUT', `/metadata/sinks/${type}/confKeys/v1`, props);
    const refused = async (type: string, props: Record<string, unknown>, text: RegExp) => {
      const r = await put(type, props);
      assert.equal(r.status, 400, type);
      const body = r.json() as { error: number; message: string };
      assert.equal(body.error, 5000);
      assert.match(body.message, text);
    };
    await refused('rest', { url: 'ftp://x' }, /Invalid url, expect http or https scheme/);
    await refused('rest', { url: 'http://x', method: 'patch' }, /Not supported HTTP method patch/);
    await refused('websocket', { addr: '127.0.0.1:1' }, /path is required/);
    await refused('redisPub', { address: '127.0.0.1:6379', channel: 'c', db: 20 }, /db should be in range 0-15/);
    await refused('redis', { addr: '127.0.0.1:6379', db: 16 }, /db should be in range 0-15/);
    // nothing was stored by the refused requests
    assert.deepEqual((await s.req('GET', '/metadata/sinks/yaml/rest')).json(), {});
    // valid partial keys pass: the action completes them
    assert.equal((await put('rest', { url: 'http://x', headers: { A: 'b' } })).status, 200);
    assert.equal((await put('redis', { addr: '127.0.0.1:6379', password: 'p' })).status, 200);
    assert.equal((await put('websocket', { path: '/ws' })).status, 200);
    assert.equal((await put('mqtt', { qos: 7 })).status, 200);
  } finally {
    await s.dispose();
  }
});
