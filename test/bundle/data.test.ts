/**
 * Data import/export over real HTTP on full servers: round trips, partial imports over existing data, malformed
 * bundles that must leave the previous state intact, and the status document.
 */
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { Broker, call, ok, ruleStates, uid, until } from './helpers.js';

const PROTO = 'syntax = "proto3";\nmessage Reading { int64 id = 1; double t = 2; }\n';

interface Setup {
  stream: string;
  table: string;
  inTopic: string;
  outTopic: string;
  running: string;
  stopped: string;
  confKey: string;
  sinkKey: string;
  upload: string;
  schema: string;
}

/** Streams, a table, a running and a stopped rule, config keys, an upload and a schema. */
async function buildSetup(s: TestServer): Promise<Setup> {
  const x: Setup = {
    stream: uid('s'),
    table: uid('t'),
    inTopic: `eddy/bundle/${uid('in')}`,
    outTopic: `eddy/bundle/${uid('out')}`,
    running: uid('r_run'),
    stopped: uid('r_stop'),
    confKey: uid('ck'),
    sinkKey: uid('sk'),
    upload: `${uid('up')}.txt`,
    schema: uid('proto'),
  };
  await ok(s, 'PUT', `/metadata/sources/mqtt/confKeys/${x.confKey}`, {
    server: 'tcp://127.0.0.1:1883',
    qos: 1,
    username: 'eddy',
    password: 'pw1',
  });
  await ok(s, 'PUT', `/metadata/sinks/mqtt/confKeys/${x.sinkKey}`, {
    server: 'tcp://127.0.0.1:1883',
    username: 'eddy',
    password: 'pw2',
  });
  await ok(s, 'POST', '/config/uploads', { name: x.upload, content: 'upload content' });
  await ok(s, 'POST', '/schemas/protobuf', { name: x.schema, content: PROTO });
  await ok(s, 'POST', '/streams', {
    sql: `CREATE STREAM ${x.stream} (a BIGINT, b STRING) WITH (DATASOURCE="${x.inTopic}", FORMAT="json", CONF_KEY="${x.confKey}")`,
  });
  await ok(s, 'POST', '/tables', {
    sql: `CREATE TABLE ${x.table} (k STRING) WITH (DATASOURCE="${x.inTopic}/t", FORMAT="json")`,
  });
  await ok(s, 'POST', '/rules', {
    id: x.running,
    sql: `SELECT a * 2 AS a2, b FROM ${x.stream} WHERE a > 0`,
    actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: x.outTopic, sendSingle: true, resourceId: x.sinkKey } }],
  });
  await ok(s, 'POST', '/rules', { id: x.stopped, sql: `SELECT b FROM ${x.stream}`, actions: [{ log: {} }] });
  await ok(s, 'POST', `/rules/${x.stopped}/stop`);
  return x;
}

function exportOf(s: TestServer): Promise<Record<string, Record<string, string>>> {
  return ok(s, 'GET', '/data/export').then((r) => r.json());
}

async function importBundle(s: TestServer, bundle: unknown, query = '') {
  return call(s, 'POST', `/data/import${query}`, {
    content: typeof bundle === 'string' ? bundle : JSON.stringify(bundle),
  });
}

/** What a user sees of the setup: descriptions, rule states, config keys, upload and schema contents. */
async function observe(s: TestServer, x: Setup) {
  return {
    streams: (await ok(s, 'GET', '/streams')).json(),
    tables: (await ok(s, 'GET', '/tables')).json(),
    stream: (await ok(s, 'GET', `/streams/${x.stream}`)).json(),
    table: (await ok(s, 'GET', `/tables/${x.table}`)).json(),
    rules: await ruleStates(s),
    running: (await ok(s, 'GET', `/rules/${x.running}`)).json(),
    stopped: (await ok(s, 'GET', `/rules/${x.stopped}`)).json(),
    sources: (await ok(s, 'GET', '/metadata/sources/yaml/mqtt')).json()[x.confKey],
    upload: readFileSync(join(s.homeDir, 'data', 'uploads', x.upload), 'utf8'),
    schema: (await ok(s, 'GET', `/schemas/protobuf/${x.schema}`)).json().content,
  };
}

test('export carries every section; a full import into an empty server reproduces state and rule behaviour', async () => {
  const a = await startTestServer();
  const b = await startTestServer();
  const broker = await Broker.connect();
  try {
    const x = await buildSetup(a);
    await broker.subscribe(x.outTopic);
    const first = await broker.roundTrip(x.inTopic, JSON.stringify({ a: 21, b: 'x' }), x.outTopic);
    assert.deepEqual(JSON.parse(first.toString()), { a2: 42, b: 'x' });

    const res = await ok(a, 'GET', '/data/export');
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.match(res.headers.get('content-disposition') ?? '', /^Attachment/);
    const bundle = res.json();
    assert.deepEqual(Object.keys(bundle), [
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
    assert.match(bundle.streams[x.stream], /^CREATE STREAM/);
    assert.equal(JSON.parse(bundle.rules[x.running]).id, x.running);
    assert.equal(JSON.parse(bundle.rules[x.stopped]).triggered, false);
    // secrets travel in clear so that an import restores working keys
    assert.equal(JSON.parse(bundle.sourceConfig.mqtt)[x.confKey].password, 'pw1');
    assert.equal(JSON.parse(bundle.sinkConfig.mqtt)[x.sinkKey].password, 'pw2');
    assert.deepEqual(JSON.parse(bundle.uploads[x.upload]), { name: x.upload, content: 'upload content', file: '' });
    assert.equal(JSON.parse(bundle.Schema[`protobuf_${x.schema}`]).content, PROTO);

    const imported = await importBundle(b, bundle);
    assert.equal(imported.status, 200, imported.text);
    assert.deepEqual(imported.json(), {
      ErrorMsg: '',
      ConfigResponse: Object.fromEntries(Object.keys(bundle).map((k) => [k, {}])),
    });
    await until('the imported rule to run', async () =>
      (await ruleStates(b))[x.running] === 'Running' ? true : undefined,
    );
    assert.deepEqual(await observe(b, x), await observe(a, x));
    assert.deepEqual(await exportOf(b), bundle);

    // the imported rule behaves as the original: stop the original, the copy answers alone
    await ok(a, 'POST', `/rules/${x.running}/stop`);
    const copy = await broker.roundTrip(x.inTopic, JSON.stringify({ a: 5, b: 'y' }), x.outTopic);
    assert.deepEqual(JSON.parse(copy.toString()), { a2: 10, b: 'y' });
    const status = (await ok(b, 'GET', '/data/import/status')).json();
    assert.ok(Object.values(status).every((v) => Object.keys(v as object).length === 0));
  } finally {
    await broker.close();
    await a.dispose();
    await b.dispose();
  }
});

test('a full import replaces everything: what the bundle lacks is gone, upload files stay', async () => {
  const s = await startTestServer();
  try {
    const x = await buildSetup(s);
    const bundle = await exportOf(s);
    const before = await observe(s, x);
    const extra = uid('extra');
    await ok(s, 'POST', '/streams', { sql: `CREATE STREAM ${extra} () WITH (DATASOURCE="e/${extra}")` });
    await ok(s, 'POST', '/rules', { id: `${extra}_r`, sql: `SELECT * FROM ${extra}`, actions: [{ log: {} }] });
    await ok(s, 'PUT', `/metadata/sources/mqtt/confKeys/${extra}`, { server: 'tcp://127.0.0.1:1883' });
    await ok(s, 'POST', '/schemas/protobuf', { name: extra, content: PROTO });
    await ok(s, 'POST', '/config/uploads', { name: `${extra}.txt`, content: 'extra upload' });

    const r = await importBundle(s, bundle);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(await exportOf(s), bundle);
    assert.equal((await call(s, 'GET', `/streams/${extra}`)).status, 404);
    assert.equal((await call(s, 'GET', `/rules/${extra}_r`)).status, 404);
    assert.equal((await ok(s, 'GET', '/metadata/sources/yaml/mqtt')).json()[extra], undefined);
    assert.equal((await call(s, 'GET', `/schemas/protobuf/${extra}`)).status, 404);
    // the upload record is forgotten (not exported any more) but the file itself stays
    assert.ok(readFileSync(join(s.homeDir, 'data', 'uploads', `${extra}.txt`), 'utf8') === 'extra upload');
    await until('the rule to run again', async () =>
      (await ruleStates(s))[x.running] === 'Running' ? true : undefined,
    );
    assert.deepEqual(await observe(s, x), before);
  } finally {
    await s.dispose();
  }
});

test('partial import merges into existing data: replaces streams and rules, creates new ones, deletes nothing', async () => {
  const s = await startTestServer();
  try {
    const x = await buildSetup(s);
    const newStream = uid('s_new');
    const newRule = uid('r_new');
    const bundle = {
      streams: {
        [x.stream]: `CREATE STREAM ${x.stream} (a BIGINT, b STRING, c FLOAT) WITH (DATASOURCE="${x.inTopic}", FORMAT="json", CONF_KEY="${x.confKey}")`,
        [newStream]: `CREATE STREAM ${newStream} (v BIGINT) WITH (DATASOURCE="p/${newStream}")`,
      },
      rules: {
        [x.stopped]: JSON.stringify({ sql: `SELECT b, c FROM ${x.stream}`, actions: [{ log: {} }], triggered: false }),
        [newRule]: JSON.stringify({ id: newRule, sql: `SELECT v FROM ${newStream}`, actions: [{ log: {} }] }),
      },
      sourceConfig: { mqtt: JSON.stringify({ [`${x.confKey}_2`]: { server: 'tcp://127.0.0.1:1883' } }) },
    };
    const r = await importBundle(s, bundle, '?partial=1');
    assert.equal(r.status, 200, r.text);
    const fields = (await ok(s, 'GET', `/streams/${x.stream}`))
      .json()
      .StreamFields.map((f: { Name: string }) => f.Name);
    assert.deepEqual(fields, ['a', 'b', 'c']);
    assert.ok((await ok(s, 'GET', '/streams')).json().includes(newStream));
    assert.equal((await ok(s, 'GET', `/rules/${x.stopped}`)).json().sql, `SELECT b, c FROM ${x.stream}`);
    const states = await until('the new rule to run', async () => {
      const st = await ruleStates(s);
      return st[newRule] === 'Running' ? st : undefined;
    });
    assert.equal(states[x.running], 'Running');
    assert.match(states[x.stopped], /^Stopped/);
    const keys = (await ok(s, 'GET', '/metadata/sources/yaml/mqtt')).json();
    assert.ok(keys[x.confKey] && keys[`${x.confKey}_2`], 'existing config keys are kept, new ones added');
    assert.ok((await ok(s, 'GET', '/tables')).json().includes(x.table));
  } finally {
    await s.dispose();
  }
});

/** A server with the setup; `bad` must be refused and leave exactly the observed state and the export. */
async function refusedWithoutChange(
  s: TestServer,
  x: Setup,
  bad: unknown,
  expectInStatus: Array<[string, string, RegExp]>,
): Promise<void> {
  const before = await exportOf(s);
  const seen = await observe(s, x);
  const r = await importBundle(s, bad);
  assert.equal(r.status, 400, r.text);
  const body = r.json();
  assert.equal(body.error, 1000);
  const doc = JSON.parse(body.message);
  for (const [section, item, re] of expectInStatus) {
    assert.match(doc[section][item] ?? '', re, `${section}.${item} in ${body.message}`);
  }
  assert.deepEqual((await ok(s, 'GET', '/data/import/status')).json(), doc);
  assert.deepEqual(await exportOf(s), before);
  await until('the previous rules to run again', async () =>
    (await ruleStates(s))[x.running] === 'Running' ? true : undefined,
  );
  assert.deepEqual(await observe(s, x), seen);
}

test('malformed bundles leave the previous state intact and name every failing item', async () => {
  const s = await startTestServer();
  const web = createServer((_req, res) => {
    res.statusCode = 404;
    res.end();
  });
  await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
  const port = (web.address() as { port: number }).port;
  try {
    const x = await buildSetup(s);
    const good = await exportOf(s);

    // not JSON at all: refused before anything happens
    const before = await exportOf(s);
    const notJson = await importBundle(s, '{"streams": 12');
    assert.equal(notJson.status, 400);
    assert.match(notJson.json().message, /^configuration unmarshal with error /);
    const wrongShape = await importBundle(s, '{"streams": 12}');
    assert.match(wrongShape.json().message, /^configuration unmarshal with error json: cannot unmarshal number/);
    assert.deepEqual(await exportOf(s), before);

    // bad SQL in one item, a DROP smuggled into streams (docs/compatibility.md D24), a rule without actions, and unsupported plugins
    await refusedWithoutChange(
      s,
      x,
      {
        ...good,
        streams: {
          ...good.streams,
          broken: 'CREATE STREAM broken (a BIGINT WITH (DATASOURCE="x")',
          dropper: `DROP STREAM ${x.stream}`,
        },
        rules: { ...good.rules, noact: JSON.stringify({ id: 'noact', sql: `SELECT * FROM ${x.stream}`, actions: [] }) },
        nativePlugins: {
          sinks_tdengine: '{"name":"tdengine","file":"https://example.com/tdengine.zip","shellParas":[]}',
        },
        Service: { vision: '{"name":"vision","file":"https://example.com/vision.zip"}' },
      },
      [
        ['streams', 'broken', /./],
        ['streams', 'dropper', /Invalid stream statement/],
        ['rules', 'noact', /^Missing rule actions\.$/],
      ],
    );

    // a rule reading a stream that does not exist: found only while importing, then rolled back
    await refusedWithoutChange(
      s,
      x,
      {
        ...good,
        rules: {
          ...good.rules,
          orphan: JSON.stringify({ id: 'orphan', sql: 'SELECT * FROM nowhere', actions: [{ log: {} }] }),
        },
      },
      [['rules', 'orphan', /nowhere/]],
    );

    // an upload whose download fails; the previous content of the same file comes back
    await refusedWithoutChange(
      s,
      x,
      {
        ...good,
        uploads: {
          ...good.uploads,
          [x.upload]: JSON.stringify({ name: x.upload, content: 'replaced content', file: '' }),
          missing: JSON.stringify({ name: 'missing.txt', content: '', file: `http://127.0.0.1:${port}/missing.txt` }),
        },
      },
      [['uploads', 'missing', /404/]],
    );
    assert.equal(existsSync(join(s.homeDir, 'data', 'uploads', 'missing.txt')), false);

    // a rule whose JSON id differs from its key
    await refusedWithoutChange(
      s,
      x,
      {
        ...good,
        rules: {
          ...good.rules,
          key1: JSON.stringify({ id: 'other', sql: `SELECT * FROM ${x.stream}`, actions: [{ log: {} }] }),
        },
      },
      [['rules', 'key1', /^RuleId is not consistent with rule id\.$/]],
    );
  } finally {
    await new Promise((r) => web.close(r));
    await s.dispose();
  }
});

test('partial import with failing items applies the others and reports each failure', async () => {
  const s = await startTestServer();
  try {
    const okStream = uid('s_ok');
    const r = await importBundle(
      s,
      {
        streams: {
          [okStream]: `CREATE STREAM ${okStream} (a BIGINT) WITH (DATASOURCE="q/${okStream}")`,
          other: `CREATE STREAM mismatch () WITH (DATASOURCE="z")`,
        },
        rules: { orphan: JSON.stringify({ id: 'orphan', sql: 'SELECT * FROM nowhere', actions: [{ log: {} }] }) },
        portablePlugins: { mirror: '{"name":"mirror","file":"file:///opt/mirror.zip","shellParas":[]}' },
      },
      '?partial=1',
    );
    assert.equal(r.status, 400);
    const doc = JSON.parse(r.json().message);
    assert.match(doc.streams.other, /must update the other source/);
    assert.match(doc.rules.orphan, /nowhere/);
    assert.match(doc.portablePlugins.mirror, /not supported|\/opt\/mirror\.zip/);
    assert.deepEqual(doc.tables, {});
    assert.ok((await ok(s, 'GET', '/streams')).json().includes(okStream));
    assert.equal((await call(s, 'GET', '/rules/orphan')).status, 404);
    assert.deepEqual((await ok(s, 'GET', '/data/import/status')).json(), doc);
  } finally {
    await s.dispose();
  }
});

test('import request errors: body checks, file URLs', async () => {
  const s = await startTestServer();
  try {
    const cases: Array<[unknown, string | RegExp]> = [
      [{ content: '{}', file: 'file:///x.json' }, 'Invalid body: Cannot specify both content and file'],
      [{}, 'Invalid body: must specify content or file'],
      [
        { file: `file://${tmpdir()}/nonexistent/eddy/bundle.json` },
        `stat ${tmpdir()}/nonexistent/eddy/bundle.json: no such file or directory`,
      ],
      [{ file: 'ftp://example.com/b.json' }, 'unsupported url scheme ftp'],
      ['{"content": ', /^Invalid body: Error decoding json: /],
    ];
    for (const [body, msg] of cases) {
      const r = await call(s, 'POST', '/data/import', body);
      assert.equal(r.status, 400);
      assert.equal(r.json().error, 1000);
      if (typeof msg === 'string') assert.equal(r.json().message, msg);
      else assert.match(r.json().message, msg);
    }
    const file = join(s.homeDir, 'bundle.json');
    const name = uid('sf');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(file, JSON.stringify({ streams: { [name]: `CREATE STREAM ${name} () WITH (DATASOURCE="f")` } }));
    const r = await call(s, 'POST', '/data/import?partial=1', { file: `file://${file}` });
    assert.equal(r.status, 200, r.text);
    assert.ok((await ok(s, 'GET', '/streams')).json().includes(name));
  } finally {
    await s.dispose();
  }
});

test('POST /data/export exports only what the named rules need', async () => {
  const s = await startTestServer();
  try {
    const x = await buildSetup(s);
    const other = uid('s_other');
    await ok(s, 'POST', '/streams', { sql: `CREATE STREAM ${other} () WITH (DATASOURCE="o/${other}")` });
    await ok(s, 'PUT', `/metadata/sources/mqtt/confKeys/${other}`, { server: 'tcp://127.0.0.1:1883' });
    const r = await ok(s, 'POST', '/data/export', [x.running, 'nosuch']);
    assert.equal(r.headers.get('content-type'), 'application/octet-stream');
    const b = r.json();
    assert.deepEqual(Object.keys(b.rules), [x.running, 'nosuch']);
    assert.equal(b.rules.nosuch, '');
    assert.deepEqual(Object.keys(b.streams), [x.stream]);
    assert.deepEqual(b.tables, {});
    assert.deepEqual(Object.keys(JSON.parse(b.sourceConfig.mqtt)), [x.confKey]);
    assert.deepEqual(Object.keys(JSON.parse(b.sinkConfig.mqtt)), [x.sinkKey]);
    assert.deepEqual(Object.keys(b.uploads), [x.upload]);
    assert.deepEqual(b.Schema, {});
    // a body that is not an array exports for no rule
    const none = (await ok(s, 'POST', '/data/export', { not: 'a list' })).json();
    assert.deepEqual(none.rules, {});
    assert.deepEqual(none.streams, {});
  } finally {
    await s.dispose();
  }
});

test('POST /data/export of a rule carries the streams and lookup tables it reads, even a rule that cannot be planned', async () => {
  const s = await startTestServer();
  try {
    const st = uid('demo');
    const lt = uid('lut');
    const bundle = {
      streams: { [st]: `CREATE STREAM ${st} (id BIGINT) WITH (DATASOURCE="${st}", TYPE="memory")` },
      tables: {
        [lt]: `CREATE TABLE ${lt} (id BIGINT, label STRING) WITH (DATASOURCE="${lt}", TYPE="memory", KIND="lookup", KEY="id")`,
      },
      rules: {
        rule1: JSON.stringify({
          id: 'rule1',
          sql: `SELECT d.id, l.label FROM ${st} AS d INNER JOIN ${lt} AS l ON d.id = l.id`,
          actions: [{ nop: {} }],
        }),
        // a function of a plugin this server does not have: the rule is kept, unplannable
        rule2: JSON.stringify({
          id: 'rule2',
          sql: `SELECT resize(d.id) FROM ${st} AS d INNER JOIN ${lt} ON d.id = ${lt}.id`,
          actions: [{ nop: {} }],
        }),
      },
    };
    const r = await call(s, 'POST', '/data/import', { content: JSON.stringify(bundle) });
    assert.equal(r.status, 200, r.text);
    const states = await ruleStates(s);
    assert.equal(states.rule2, 'Stopped: fail to create the topo.');
    for (const id of ['rule1', 'rule2']) {
      const b = (await ok(s, 'POST', '/data/export', [id])).json();
      assert.deepEqual(Object.keys(b.rules), [id]);
      assert.deepEqual(b.streams, bundle.streams, id);
      assert.deepEqual(b.tables, bundle.tables, id);
    }
  } finally {
    await s.dispose();
  }
});

test('on the Redis metadata store: a refused import changes nothing, a full import round-trips', async () => {
  const redisPrefix = `eddy-test:${uid('bundle')}:`;
  const s = await startTestServer({ redisPrefix });
  try {
    const x = await buildSetup(s);
    const good = await exportOf(s);
    await refusedWithoutChange(
      s,
      x,
      {
        ...good,
        rules: {
          ...good.rules,
          orphan: JSON.stringify({ id: 'orphan', sql: 'SELECT * FROM nowhere', actions: [{ log: {} }] }),
        },
      },
      [['rules', 'orphan', /nowhere/]],
    );
    const r = await importBundle(s, good);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(await exportOf(s), good);
    await s.stop();
    const again = await startTestServer({ home: s.homeDir, redisPrefix });
    try {
      // stored rules are restored in the background once the REST API answers
      await until('the rules to be restored', async () =>
        Object.keys((await exportOf(again)).rules).length === 2 ? true : undefined,
      );
      assert.deepEqual(await exportOf(again), good);
      // leave the prefix empty: a full import of an empty bundle resets everything
      assert.equal((await importBundle(again, {})).status, 200);
    } finally {
      await again.stop();
    }
  } finally {
    await s.dispose();
  }
});
