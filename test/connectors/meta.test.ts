import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';

interface Info {
  name: string;
  about: { installed: boolean; description: { en_US: string } };
}
interface Field {
  name: string;
  default: unknown;
  type: string;
  control: string;
  optional: boolean;
  hint: { en_US: string; zh_CN: string };
}

test('UI metadata: source, sink and connection lists sorted by name; per-type property descriptors; unknown names 404', async () => {
  const s = await startTestServer();
  try {
    const sources = (await s.req('GET', '/metadata/sources')).json() as Info[];
    const names = sources.map((x) => x.name);
    assert.deepEqual(names, [...names].sort());
    for (const n of ['mqtt', 'memory', 'httppull', 'httppush', 'file', 'redis', 'redisSub', 'websocket'])
      assert.ok(names.includes(n), n);
    assert.equal(sources[0].about.installed, true);
    const lookups = ((await s.req('GET', '/metadata/sources?kind=lookup')).json() as Info[]).map((x) => x.name);
    assert.ok(lookups.includes('redis') && lookups.includes('memory') && lookups.includes('httppull'));
    assert.ok(!lookups.includes('mqtt'));
    const scans = ((await s.req('GET', '/metadata/sources?kind=scan')).json() as Info[]).map((x) => x.name);
    assert.ok(scans.includes('mqtt') && !scans.includes('redis'));

    const mqtt = (await s.req('GET', '/metadata/sources/mqtt')).json() as {
      properties: { default: Field[] };
      libs: string[];
    };
    const server = mqtt.properties.default.find((p) => p.name === 'server')!;
    assert.equal(server.default, 'tcp://127.0.0.1:1883');
    assert.equal(server.optional, false);
    assert.equal(server.type, 'string');
    assert.equal(typeof server.hint.en_US, 'string');
    assert.deepEqual(mqtt.libs, []);

    const sinks = ((await s.req('GET', '/metadata/sinks')).json() as Info[]).map((x) => x.name);
    for (const n of ['log', 'nop', 'mqtt', 'rest', 'memory', 'redis', 'redisPub', 'file', 'websocket'])
      assert.ok(sinks.includes(n), n);
    assert.deepEqual(sinks, [...sinks].sort());
    const rest = (await s.req('GET', '/metadata/sinks/rest')).json() as { properties: Field[] };
    const method = rest.properties.find((p) => p.name === 'method')!;
    assert.equal(method.control, 'select');
    assert.ok(rest.properties.some((p) => p.name === 'sendSingle'));

    assert.deepEqual(
      ((await s.req('GET', '/metadata/connections')).json() as Info[]).map((x) => x.name),
      ['mqtt'],
    );
    assert.equal((await s.req('GET', '/metadata/connections/mqtt')).status, 200);

    for (const path of ['/metadata/sources/nosuch', '/metadata/sinks/nosuch', '/metadata/connections/nosuch']) {
      const r = await s.req('GET', path);
      assert.equal(r.status, 404, path);
      assert.deepEqual(r.json(), { error: 1002, message: 'This plugin was not found:nosuch' });
    }
    // the config-key routes next to them still answer
    assert.equal((await s.req('GET', '/metadata/sources/yaml/mqtt')).status, 200);
  } finally {
    await s.dispose();
  }
});

test('config-key overviews: /metadata/resources lists user keys by kind; /metadata/resource filters by sourceType, masked', async () => {
  const s = await startTestServer();
  try {
    assert.deepEqual((await s.req('GET', '/metadata/resources')).json(), { sources: null, sinks: null });
    assert.equal(
      (await s.req('PUT', '/metadata/sources/mqtt/confKeys/plant2', { server: 'tcp://10.0.0.7:1883', password: 'pw' }))
        .status,
      200,
    );
    assert.equal(
      (await s.req('PUT', '/metadata/sources/mqtt/confKeys/plant1', { server: 'tcp://10.0.0.6:1883' })).status,
      200,
    );
    assert.equal(
      (await s.req('PUT', '/metadata/sources/httppull/confKeys/w1', { url: 'http://x', sourceType: 'weather' })).status,
      200,
    );
    assert.equal((await s.req('PUT', '/metadata/sinks/rest/confKeys/out1', { url: 'http://y' })).status, 200);
    assert.deepEqual((await s.req('GET', '/metadata/resources')).json(), {
      sources: [{ w1: 'httppull' }, { plant1: 'mqtt', plant2: 'mqtt' }],
      sinks: [{ out1: 'rest' }],
    });
    assert.deepEqual((await s.req('GET', '/metadata/resource?sourceType=weather')).json(), {
      httppull: { w1: { sourceType: 'weather', url: 'http://x' } },
    });
    const all = (await s.req('GET', '/metadata/resource')).json() as Record<
      string,
      Record<string, Record<string, unknown>>
    >;
    assert.equal(all.mqtt.plant2.password, '******');
    assert.ok(all.mqtt.default, 'shipped keys are part of it');
  } finally {
    await s.dispose();
  }
});
