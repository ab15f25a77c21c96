/**
 * A bundle as eKuiper 1.14 exports it (rules as stored JSON text with eKuiper's rule fields and options, config
 * sections as JSON texts, plugin and service items, a schema, an upload) imports into Eddy unchanged: what Eddy can
 * run runs, and what it cannot install is named in the status document without failing the import.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Broker, call, ok, ruleStates, uid, until } from './helpers.js';
import { ArchiveDir, HELLO_PROTO } from '../extensions/services-fixture.js';
import { pluginZip } from '../extensions/portable-fixture.js';

const J = JSON.stringify;

/** The rule options eKuiper's management console writes into every rule it saves. */
const CONSOLE_OPTIONS = {
  isEventTime: false,
  lateTolerance: 1000,
  concurrency: 1,
  bufferLength: 1024,
  sendMetaToSink: false,
  sendError: true,
  qos: 0,
  checkpointInterval: 300000,
  restartStrategy: { attempts: 0, delay: 1000, multiplier: 2, maxDelay: 30000, jitterFactor: 0.1 },
};

interface Names {
  inTopic: string;
  outTopic: string;
  confKey: string;
  sinkKey: string;
  prefix: string;
}

function ekuiperBundle(n: Names): Record<string, Record<string, string>> {
  const p = n.prefix;
  return {
    streams: {
      [`${p}demo`]: `create stream ${p}demo() WITH ( datasource = "${n.inTopic}/raw", FORMAT = "json", TYPE = "mqtt", CONF_KEY = "${n.confKey}", SHARED = "false" )`,
      [`${p}demo2`]: `CREATE STREAM ${p}demo2 (id BIGINT, temp FLOAT, name STRING) WITH (DATASOURCE="${n.inTopic}", FORMAT="JSON", TYPE="mqtt", KEY="id", TIMESTAMP="", STRICT_VALIDATION="false", CONF_KEY="${n.confKey}")`,
      [`${p}pb`]: `CREATE STREAM ${p}pb () WITH (DATASOURCE="${n.inTopic}/pb", FORMAT="protobuf", SCHEMAID="${p}proto.Reading")`,
    },
    tables: {
      [`${p}lut`]: `CREATE TABLE ${p}lut (id BIGINT, label STRING) WITH (DATASOURCE="${p}lut", TYPE="memory", KIND="lookup", KEY="id")`,
    },
    rules: {
      [`${p}r1`]: J({
        id: `${p}r1`,
        name: 'hot readings',
        triggered: true,
        sql: `SELECT temp, name FROM ${p}demo2 WHERE temp > 20`,
        actions: [
          {
            mqtt: {
              server: 'tcp://127.0.0.1:1883',
              topic: n.outTopic,
              sendSingle: true,
              qos: 0,
              retained: false,
              format: 'json',
              runAsync: false,
              omitIfEmpty: false,
              bufferLength: 1024,
              enableCache: false,
              resourceId: n.sinkKey,
            },
          },
        ],
        options: CONSOLE_OPTIONS,
      }),
      [`${p}r2`]: J({
        id: `${p}r2`,
        sql: `SELECT * FROM ${p}demo`,
        actions: [{ log: {} }, { nop: {} }],
        options: { ...CONSOLE_OPTIONS, cron: '', duration: '' },
      }),
      // no id in the JSON: the map key is the id; not triggered
      [`${p}r3`]: J({
        triggered: false,
        sql: `SELECT d.id, l.label FROM ${p}demo2 AS d INNER JOIN ${p}lut AS l ON d.id = l.id`,
        actions: [{ memory: { topic: `${p}mem` } }],
      }),
      [`${p}r4`]: J({ id: `${p}r4`, sql: `SELECT * FROM ${p}pb`, actions: [{ log: {} }] }),
      // need the plugins of the bundle, which Eddy cannot install
      [`${p}r5`]: J({ id: `${p}r5`, sql: `SELECT ${p}fn(temp) FROM ${p}demo2`, actions: [{ log: {} }] }),
      [`${p}r6`]: J({
        id: `${p}r6`,
        sql: `SELECT * FROM ${p}demo2`,
        actions: [{ [`${p}influx`]: { addr: 'http://127.0.0.1:8086' } }],
      }),
    },
    nativePlugins: {
      [`functions_${p}fn`]: J({ name: `${p}fn`, file: 'https://packages.example.com/fn_amd64.zip', shellParas: [] }),
      [`sinks_${p}influx`]: J({
        name: `${p}influx`,
        file: 'https://packages.example.com/influx_amd64.zip',
        shellParas: [],
      }),
      // standard eKuiper plugins that Eddy has built in: nothing to report
      sources_sql: J({ name: 'sql', file: 'https://packages.example.com/sql_amd64.zip', shellParas: [] }),
      sinks_sql: J({ name: 'sql', file: 'https://packages.example.com/sql_amd64.zip', shellParas: [] }),
    },
    portablePlugins: { [`${p}mirror`]: J({ name: `${p}mirror`, file: 'file:///opt/pkgs/mirror.zip', shellParas: [] }) },
    // eKuiper exports a password even when the config key has no user name
    sourceConfig: {
      mqtt: J({
        [n.confKey]: {
          insecureSkipVerify: false,
          protocolVersion: '3.1.1',
          qos: 1,
          server: 'tcp://127.0.0.1:1883',
          password: 'pw',
        },
      }),
      httppull: J({ [`${p}weather`]: { url: 'http://127.0.0.1:9/weather', interval: 10000, method: 'get' } }),
    },
    sinkConfig: { mqtt: J({ [n.sinkKey]: { server: 'tcp://127.0.0.1:1883', protocolVersion: '3.1.1' } }) },
    connectionConfig: { mqtt: J({ [`${p}conn`]: { server: 'tcp://127.0.0.1:1883' } }) },
    // an archive at the exporting site, out of reach here
    Service: { [`${p}vision`]: J({ name: `${p}vision`, file: 'http://127.0.0.1:9/vision.zip' }) },
    Schema: {
      [`protobuf_${p}proto`]: J({
        type: 'protobuf',
        name: `${p}proto`,
        content: 'syntax = "proto3";message Reading { int64 id = 1; double t = 2; }',
        file: '',
        soFile: '',
      }),
      // with a static codec (Go plugin) beside its proto, and with the static codec only
      [`protobuf_${p}static`]: J({
        type: 'protobuf',
        name: `${p}static`,
        content: 'syntax = "proto3";message S { int64 id = 1; }',
        file: '',
        soFile: 'https://packages.example.com/static.so',
      }),
      [`protobuf_${p}soonly`]: J({
        type: 'protobuf',
        name: `${p}soonly`,
        content: '',
        file: '',
        soFile: 'https://packages.example.com/soonly.so',
      }),
      // a Go codec plugin
      [`custom_${p}codec`]: J({
        type: 'custom',
        name: `${p}codec`,
        content: '',
        file: '',
        soFile: 'https://packages.example.com/codec.so',
      }),
    },
    uploads: {
      [`${p}cert.pem`]: J({
        name: `${p}cert.pem`,
        content: '-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n',
        file: '',
      }),
    },
    // eKuiper's default build has no scripts section at all
  };
}

function names(): Names {
  return {
    inTopic: `eddy/ek/${uid('in')}`,
    outTopic: `eddy/ek/${uid('out')}`,
    confKey: uid('demo_conf'),
    sinkKey: uid('sink_conf'),
    prefix: `${uid('ek')}_`,
  };
}

function expectedNotes(p: string): Record<string, Record<string, RegExp>> {
  return {
    // the archives named by an eKuiper export cannot be fetched here: each item says so
    nativePlugins: {
      [`functions_${p}fn`]: /^fail to download file https:\/\/packages\.example\.com\/fn_amd64\.zip/,
      [`sinks_${p}influx`]: /^fail to download file https:\/\/packages\.example\.com\/influx_amd64\.zip/,
    },
    portablePlugins: { [`${p}mirror`]: /not supported|\/opt\/pkgs\/mirror\.zip/ },
    Service: {
      [`${p}vision`]: /^service create command error: fail to download file http:\/\/127.0.0.1:9\/vision.zip/,
    },
    Schema: {
      [`custom_${p}codec`]: /^custom schemas are format plugin archives \(\.zip\); a Go codec plugin cannot be loaded/,
      [`protobuf_${p}static`]:
        /^static schema plugins \(soFile\) are not supported by Eddy: .* was installed from its proto only$/,
      [`protobuf_${p}soonly`]: /^static schema plugins \(soFile\) are not supported by Eddy: .* was not installed$/,
    },
    rules: {
      [`${p}r5`]: new RegExp(`^function ${p}fn not found`),
      [`${p}r6`]: new RegExp(`^sink ${p}influx is not defined`),
    },
  };
}

function assertNotes(doc: Record<string, Record<string, string>>, p: string): void {
  const want = expectedNotes(p);
  assert.deepEqual(Object.keys(doc), [
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
  ]);
  for (const [section, items] of Object.entries(doc)) {
    assert.deepEqual(Object.keys(items).sort(), Object.keys(want[section] ?? {}).sort(), section);
    for (const [name, text] of Object.entries(items)) assert.match(text, want[section][name], `${section}.${name}`);
  }
}

async function checkImported(s: TestServer, n: Names, broker: Broker): Promise<void> {
  const p = n.prefix;
  const states = await until('rules to settle', async () => {
    const st = await ruleStates(s);
    return st[`${p}r1`] === 'Running' && st[`${p}r2`] === 'Running' && st[`${p}r4`] === 'Running' ? st : undefined;
  });
  assert.equal(states[`${p}r3`], 'Stopped: canceled manually.');
  assert.equal(states[`${p}r5`], 'Stopped: fail to create the topo.');
  assert.equal(states[`${p}r6`], 'Stopped: fail to create the topo.');
  assert.equal((await ok(s, 'GET', `/rules/${p}r3`)).json().id, `${p}r3`);

  // the rule works end to end, through the imported source config key
  const got = await broker.roundTrip(n.inTopic, J({ id: 1, temp: 25.5, name: 'a' }), n.outTopic);
  assert.deepEqual(JSON.parse(got.toString()), { temp: 25.5, name: 'a' });

  const mqttKeys = (await ok(s, 'GET', '/metadata/sources/yaml/mqtt')).json();
  assert.deepEqual(mqttKeys[n.confKey], {
    insecureSkipVerify: false,
    protocolVersion: '3.1.1',
    qos: 1,
    server: 'tcp://127.0.0.1:1883',
    password: '******',
  });
  assert.ok(`${p}weather` in (await ok(s, 'GET', '/metadata/sources/yaml/httppull')).json());
  assert.ok(n.sinkKey in (await ok(s, 'GET', '/metadata/sinks/yaml/mqtt')).json());
  const schemas = (await ok(s, 'GET', '/schemas/protobuf')).json() as string[];
  assert.deepEqual(schemas.filter((n) => n.startsWith(p)).sort(), [`${p}proto`, `${p}static`]);
  const upload = join(s.homeDir, 'data', 'uploads', `${p}cert.pem`);
  assert.ok(existsSync(upload));
  assert.match(readFileSync(upload, 'utf8'), /BEGIN CERTIFICATE/);
}

test('an eKuiper 1.14 export bundle imports unchanged; items Eddy cannot install are named, rules needing them kept stopped', async () => {
  const s = await startTestServer();
  const broker = await Broker.connect();
  try {
    const n = names();
    await broker.subscribe(n.outTopic);
    const bundle = ekuiperBundle(n);
    const r = await call(s, 'POST', '/data/import', { content: J(bundle) });
    assert.equal(r.status, 200, r.text);
    const body = r.json();
    assert.deepEqual(Object.keys(body), ['ErrorMsg', 'ConfigResponse']);
    assert.equal(body.ErrorMsg, '');
    assertNotes(body.ConfigResponse, n.prefix);
    assert.deepEqual((await ok(s, 'GET', '/data/import/status')).json(), body.ConfigResponse);
    await checkImported(s, n, broker);

    // the same bundle again as a partial import: everything is replaced, the same items are named
    const again = await call(s, 'POST', '/data/import?partial=1', { content: J(bundle) });
    assert.equal(again.status, 200, again.text);
    assertNotes(again.json().ConfigResponse, n.prefix);
    await checkImported(s, n, broker);

    // and the export Eddy writes imports back the same way
    const exported = (await ok(s, 'GET', '/data/export')).text;
    const back = await call(s, 'POST', '/data/import', { content: exported });
    assert.equal(back.status, 200, back.text);
    assert.deepEqual(back.json().ConfigResponse.rules, {
      [`${n.prefix}r5`]: `function ${n.prefix}fn not found: the rule was imported stopped`,
      [`${n.prefix}r6`]: `sink ${n.prefix}influx is not defined: the rule was imported stopped`,
    });
  } finally {
    await broker.close();
    await s.dispose();
  }
});

test('into a fresh server, a partial import of an eKuiper bundle also keeps the rules that need its plugins', async () => {
  const s = await startTestServer();
  try {
    const n = names();
    const r = await call(s, 'POST', '/data/import?partial=1', { content: J(ekuiperBundle(n)) });
    assert.equal(r.status, 200, r.text);
    assertNotes(r.json().ConfigResponse, n.prefix);
    const states = await ruleStates(s);
    assert.equal(states[`${n.prefix}r5`], 'Stopped: fail to create the topo.');
    assert.equal(Object.keys(states).filter((id) => id.startsWith(n.prefix)).length, 6);
  } finally {
    await s.dispose();
  }
});

test('a rule reading a stream the bundle lacks: a full import refuses all, a partial import names it and keeps the rest', async () => {
  const s = await startTestServer();
  try {
    const n = names();
    const p = n.prefix;
    const bundle = ekuiperBundle(n);
    bundle.rules[`${p}orphan`] = J({ id: `${p}orphan`, sql: `SELECT * FROM ${p}nowhere`, actions: [{ log: {} }] });

    const full = await call(s, 'POST', '/data/import', { content: J(bundle) });
    assert.equal(full.status, 400);
    const doc = JSON.parse(full.json().message);
    assert.match(doc.rules[`${p}orphan`], new RegExp(`${p}nowhere`));
    assert.match(doc.nativePlugins[`functions_${p}fn`], /fail to download file/);
    assert.deepEqual((await ok(s, 'GET', '/rules')).json(), []);
    assert.deepEqual((await ok(s, 'GET', '/streams')).json(), []);
    assert.deepEqual((await ok(s, 'GET', '/data/import/status')).json(), doc);

    const partial = await call(s, 'POST', '/data/import?partial=1', { content: J(bundle) });
    assert.equal(partial.status, 400);
    const pdoc = JSON.parse(partial.json().message);
    assert.deepEqual(Object.keys(pdoc.rules).sort(), [`${p}orphan`, `${p}r5`, `${p}r6`]);
    assert.match(pdoc.rules[`${p}orphan`], new RegExp(`fail to get stream ${p}nowhere`));
    assert.equal((await call(s, 'GET', `/rules/${p}orphan`)).status, 404);
    const states = await ruleStates(s);
    assert.equal(Object.keys(states).length, 6);
    assert.equal((await ok(s, 'GET', '/streams')).json().length, 3);
  } finally {
    await s.dispose();
  }
});

test('bundle Service items install through the services manager: export, full import with rules using them, reset, rollback', async () => {
  const s = await startTestServer();
  const zips = new ArchiveDir();
  try {
    const p = `${uid('svc')}_`;
    const fn = `${p}greet`;
    const def = {
      about: { author: { name: 'Ops' } },
      interfaces: {
        greeter: {
          address: 'http://127.0.0.1:9',
          protocol: 'rest',
          schemaType: 'protobuf',
          schemaFile: 'hello.proto',
          functions: [{ name: fn, serviceName: 'SayHello' }],
        },
      },
    };
    const file = zips.zip({ [`${p}hello.json`]: J(def), 'schemas/hello.proto': HELLO_PROTO });
    const bundle = {
      streams: { [`${p}s`]: `CREATE STREAM ${p}s (name STRING) WITH (DATASOURCE="${p}in", TYPE="memory")` },
      rules: { [`${p}r`]: J({ id: `${p}r`, sql: `SELECT ${fn}(name) AS g FROM ${p}s`, actions: [{ log: {} }] }) },
      Service: { [`${p}hello`]: J({ name: `${p}hello`, file }) },
    };
    const r = await call(s, 'POST', '/data/import', { content: J(bundle) });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json().ConfigResponse.Service, {});
    assert.deepEqual(r.json().ConfigResponse.rules, {});
    assert.equal((await ruleStates(s))[`${p}r`], 'Running');
    assert.ok(((await ok(s, 'GET', '/services')).json() as string[]).includes(`${p}hello`));
    const exported = JSON.parse((await ok(s, 'GET', '/data/export')).text);
    assert.deepEqual(exported.Service, { [`${p}hello`]: J({ name: `${p}hello`, file }) });

    // a rule's export carries the service its functions come from; another rule's does not
    await ok(s, 'POST', '/rules', { id: `${p}plain`, sql: `SELECT name FROM ${p}s`, actions: [{ log: {} }] }, 201);
    const forRule = JSON.parse((await call(s, 'POST', '/data/export', [`${p}r`])).text);
    assert.deepEqual(forRule.Service, exported.Service);
    assert.deepEqual(JSON.parse((await call(s, 'POST', '/data/export', [`${p}plain`])).text).Service, {});
    await ok(s, 'DELETE', `/rules/${p}plain`);

    // a full import that fails is rolled back: the service is there again
    const broken = {
      ...bundle,
      rules: { ...bundle.rules, bad: J({ id: 'bad', sql: `SELECT * FROM ${p}nowhere`, actions: [{ log: {} }] }) },
    };
    assert.equal((await call(s, 'POST', '/data/import', { content: J(broken) })).status, 400);
    assert.deepEqual(JSON.parse((await ok(s, 'GET', '/data/export')).text).Service, exported.Service);

    // a full import without services removes them
    const none = await call(s, 'POST', '/data/import', { content: J({ streams: bundle.streams }) });
    assert.equal(none.status, 200, none.text);
    assert.deepEqual((await ok(s, 'GET', '/services')).json(), []);
  } finally {
    zips.dispose();
    await s.dispose();
  }
});

test('an async import of an eKuiper bundle finishes; the task message is the 200 body naming what was not installed', async () => {
  const s = await startTestServer();
  try {
    const n = names();
    const id = (await ok(s, 'POST', '/async/data/import', { content: J(ekuiperBundle(n)) })).json().id as string;
    const task = await until('the task to end', async () => {
      const t = (await ok(s, 'GET', `/async/task/${id}`)).json();
      return t.status === 'finish' || t.status === 'error' ? t : undefined;
    });
    assert.equal(task.status, 'finish', task.message);
    assert.deepEqual(Object.keys(task), ['id', 'status', 'message', 'createdTimestamp', 'updatedTimestamp']);
    const body = JSON.parse(task.message);
    assert.equal(body.ErrorMsg, '');
    assertNotes(body.ConfigResponse, n.prefix);
  } finally {
    await s.dispose();
  }
});

test('bundle portablePlugins items install through the portable plugin manager; rules use their functions; export carries them', async () => {
  const s = await startTestServer();
  const dir = mkdtempSync(join(tmpdir(), 'eddy-bundle-portable-'));
  try {
    const p = `${uid('pp')}_`;
    const fn = `${p}rev`;
    const file = join(dir, 'plugin.zip');
    writeFileSync(file, pluginZip({ name: `${p}mirror`, functions: [fn] }));
    const item = J({ name: `${p}mirror`, file: pathToFileURL(file).href, shellParas: [] });
    const bundle = {
      streams: { [`${p}s`]: `CREATE STREAM ${p}s (name STRING) WITH (DATASOURCE="${p}in", TYPE="memory")` },
      rules: { [`${p}r`]: J({ id: `${p}r`, sql: `SELECT ${fn}(name) AS g FROM ${p}s`, actions: [{ log: {} }] }) },
      portablePlugins: { [`${p}mirror`]: item },
    };
    const r = await call(s, 'POST', '/data/import', { content: J(bundle) });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json().ConfigResponse.portablePlugins, {});
    assert.equal((await ruleStates(s))[`${p}r`], 'Running');
    const exported = JSON.parse((await ok(s, 'GET', '/data/export')).text);
    assert.deepEqual(Object.keys(exported.portablePlugins), [`${p}mirror`]);
    assert.deepEqual(Object.keys(JSON.parse((await call(s, 'POST', '/data/export', [`${p}r`])).text).portablePlugins), [
      `${p}mirror`,
    ]);
    // a rule reading a plugin's source type and writing to its sink type exports that plugin, not the other
    const io = join(dir, 'io.zip');
    writeFileSync(io, pluginZip({ name: `${p}io`, sources: [`${p}src`], sinks: [`${p}snk`] }));
    const ioItem = J({ name: `${p}io`, file: pathToFileURL(io).href, shellParas: [] });
    const more = await call(s, 'POST', '/data/import?partial=1', {
      content: J({
        streams: { [`${p}s2`]: `CREATE STREAM ${p}s2 () WITH (DATASOURCE="x", TYPE="${p}src")` },
        rules: {
          [`${p}r2`]: J({
            id: `${p}r2`,
            sql: `SELECT * FROM ${p}s2`,
            actions: [{ [`${p}snk`]: { path: join(dir, 'out.txt') } }],
          }),
        },
        portablePlugins: { [`${p}io`]: ioItem },
      }),
    });
    assert.equal(more.status, 200, more.text);
    assert.deepEqual(JSON.parse((await call(s, 'POST', '/data/export', [`${p}r2`])).text).portablePlugins, {
      [`${p}io`]: ioItem,
    });

    // a full import without it uninstalls it
    assert.equal((await call(s, 'POST', '/data/import', { content: J({ streams: bundle.streams }) })).status, 200);
    assert.deepEqual(JSON.parse((await ok(s, 'GET', '/data/export')).text).portablePlugins, {});
  } finally {
    await s.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});
