/**
 * The rules REST module over real HTTP (eKuiper transport conventions of src/api/server.ts), with the registry on
 * SQLite and test topologies; the end-to-end tests on the full server are in rules.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHttp } from '../../src/api/server.js';
import { registerRuleRoutes } from '../../src/api/rules.js';
import { RuleService } from '../../src/rules/service.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import { DEFAULTS, TestEngine, silent } from '../rules/fixtures.js';

interface Res {
  status: number;
  text: string;
  type: string;
  json(): any;
}

async function withApi(
  fn: (req: (method: string, path: string, body?: unknown) => Promise<Res>, engine: TestEngine) => Promise<void>,
) {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-rules-api-'));
  const store = new SqliteStore(join(dir, 'kv.db'));
  const engine = new TestEngine();
  const rules = new RuleService({ store, logger: silent, defaults: DEFAULTS, engine });
  const app = createHttp(silent);
  registerRuleRoutes(app, rules);
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const req = (method: string, path: string, body?: unknown) =>
    new Promise<Res>((resolve, reject) => {
      const payload =
        body === undefined ? undefined : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
      const r = http.request(
        address + path,
        { method, headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {} },
        (resp) => {
          let text = '';
          resp.setEncoding('utf8');
          resp.on('data', (c) => (text += c));
          resp.on('end', () =>
            resolve({
              status: resp.statusCode!,
              text,
              type: String(resp.headers['content-type'] ?? ''),
              json: () => JSON.parse(text),
            }),
          );
        },
      );
      r.on('error', reject);
      r.end(payload);
    });
  try {
    await fn(req, engine);
  } finally {
    await app.close();
    await rules.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rule = (o: Record<string, unknown> = {}) => ({ id: 'r1', sql: 'SELECT * FROM s1', actions: [{ log: {} }], ...o });

test('create, list, describe, update, delete with eKuiper texts', async () => {
  await withApi(async (req) => {
    let r = await req('POST', '/rules', rule());
    assert.equal(r.status, 201);
    assert.equal(r.text, 'Rule r1 was created successfully.');
    assert.match(r.type, /^text\/plain/);
    r = await req('POST', '/rules', rule());
    assert.equal(r.status, 400);
    assert.deepEqual(r.json(), { error: 1000, message: 'rule r1 already exists' });
    r = await req('GET', '/rules');
    assert.deepEqual(r.json(), [{ id: 'r1', name: 'r1', status: 'Running', state: 'running' }]);
    r = await req('GET', '/rules/r1');
    assert.match(r.type, /application\/json/);
    assert.equal(r.text, JSON.stringify(rule()), 'the body as submitted');
    r = await req('PUT', '/rules/r1', rule({ sql: 'SELECT * FROM s2' }));
    assert.equal(r.status, 200);
    assert.equal(r.text, 'Rule r1 was updated successfully.');
    r = await req('DELETE', '/rules/r1');
    assert.equal(r.status, 200);
    assert.equal(r.text, 'Rule r1 is dropped.');
    r = await req('GET', '/rules');
    assert.deepEqual(r.json(), []);
  });
});

test('bad create bodies answer 400 with code 1000 and eKuiper messages', async () => {
  await withApi(async (req) => {
    const cases: Array<[unknown, string | RegExp, number?]> = [
      ['{"id": "r1",', /^invalid rule json: Parse rule \{"id": "r1", error : .+\.$/],
      ['[1,2]', /^invalid rule json: Parse rule \[1,2\] error : /],
      [{ sql: 'SELECT * FROM s1', actions: [{ log: {} }] }, 'invalid rule json: Missing rule id.'],
      [rule({ id: 'a/b' }), 'invalid rule json: ruleID:a/b contains invalidChar:/'],
      [rule({ id: ' x' }), 'invalid rule json: ruleID:  x should be trimed'],
      [rule({ id: '\tx' }), 'invalid rule json: ruleID: \tx should be trimed'],
      [rule({ graph: { nodes: {}, topo: {} } }), 'invalid rule json: Rule r1 has both sql and graph.'],
      [{ id: 'r1', actions: [{ log: {} }] }, 'invalid rule json: Rule r1 has neither sql nor graph.'],
      [rule({ actions: undefined }), 'invalid rule json: Missing rule actions.'],
      [rule({ options: { bufferLength: -1 } }), /^invalid rule json: Rule r1 has invalid options: .*bufferLength.*\.$/],
      [rule({ sql: 'SELECT * FROM nosuch' }), 'fail to get stream nosuch, please check if stream is created', 2101],
      [rule({ actions: [{ foo: {} }] }), 'sink foo is not defined', 2201],
      [
        rule({ actions: [{ log: 5 }] }),
        'expect map[string]interface{} type for the action properties, but found {"log":5}',
        2201,
      ],
    ];
    for (const [body, message, code] of cases) {
      const r = await req('POST', '/rules', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      const j = r.json();
      assert.equal(j.error, code ?? 1000, JSON.stringify(body));
      if (typeof message === 'string') assert.equal(j.message, message);
      else assert.match(j.message, message);
    }
    assert.deepEqual((await req('GET', '/rules')).json(), []);
  });
});

test("unknown rules answer 404 with each endpoint's text", async () => {
  await withApi(async (req) => {
    const cases: Array<[string, string, string, unknown?]> = [
      ['GET', '/rules/r9', 'Describe rule error: Rule r9 is not found.'],
      ['PUT', '/rules/r9', 'Rule not found: Rule r9 is not found.', rule({ id: 'r9' })],
      ['DELETE', '/rules/r9', 'Delete rule error: r9 is not found'],
      ['POST', '/rules/r9/start', 'start rule error: Rule r9 is not found in registry, please check if it is created'],
      [
        'POST',
        '/rules/r9/restart',
        'restart rule error: Rule r9 is not found in registry, please check if it is created',
      ],
      ['POST', '/rules/r9/stop', 'stop rule error: Rule r9 was not found.'],
      ['GET', '/rules/r9/status', 'get rule status error: Rule r9 is not found'],
      ['GET', '/rules/r9/topo', 'get rule topo error: Rule r9 is not found'],
      ['GET', '/rules/r9/explain', 'explain rules error: Rule r9 is not found.'],
      ['PUT', '/rules/r9/tags', 'Get rule error: Rule r9 is not found.', { tags: ['a'] }],
      ['PATCH', '/rules/r9/tags', 'Get rule error: Rule r9 is not found.', { tags: ['a'] }],
      ['DELETE', '/rules/r9/tags', 'Get rule error: Rule r9 is not found.', { keys: ['a'] }],
    ];
    for (const [method, path, message, body] of cases) {
      const r = await req(method, path, body);
      assert.equal(r.status, 404, `${method} ${path}`);
      assert.deepEqual(r.json(), { error: 1002, message });
    }
    assert.equal(
      (await req('GET', '/rules/validate')).status,
      404,
      'GET /rules/validate describes a rule named validate',
    );
    const slash = await req('GET', '/rules/');
    assert.equal(slash.status, 404);
    assert.equal(slash.text, '404 page not found\n');
  });
});

test('start, stop, restart and status objects', async () => {
  await withApi(async (req) => {
    await req('POST', '/rules', rule());
    let r = await req('POST', '/rules/r1/stop');
    assert.equal(r.text, 'Rule r1 was stopped.');
    r = await req('POST', '/rules/r1/stop');
    assert.equal(r.status, 200, 'stopping a stopped rule is fine');
    r = await req('GET', '/rules/r1/status');
    assert.deepEqual(r.json(), {
      message: 'Stopped: canceled manually.',
      status: 'stopped',
      state: 'stopped',
      lastError: '',
      lastErrorTime: 0,
    });
    r = await req('POST', '/rules/r1/start');
    assert.equal(r.text, 'Rule r1 was started');
    r = await req('POST', '/rules/r1/restart');
    assert.equal(r.text, 'Rule r1 was restarted');
    r = await req('GET', '/rules/r1/status');
    assert.match(r.type, /application\/json/);
    assert.match(
      r.text,
      /^\{\n {2}"status": "running",\n {2}"lastStartTimestamp": \d+,\n {2}"lastStopTimestamp": \d+,\n {2}"nextStartTimestamp": 0,\n/,
    );
    const st = r.json();
    assert.equal(st.sink_log_0_0_last_invocation, '0001-01-01T00:00:00');
    assert.equal(st.sink_log_0_0_process_latency_ms, 0);
    r = await req('GET', '/rules/status/all');
    assert.deepEqual(r.json(), { r1: { status: 'Running', last_exception: '', exceptions_total: 0 } });
    r = await req('GET', '/rules/r1/topo');
    assert.deepEqual(r.json(), {
      sources: ['source_s1'],
      edges: { source_s1: ['op_2_project'], op_2_project: ['sink_log_0'] },
    });
    r = await req('GET', '/rules/r1/explain');
    assert.match(r.type, /^text\/plain/);
    assert.match(r.text, /ProjectPlan/);
    r = await req('GET', '/rules/usage/cpu');
    assert.deepEqual(r.json(), { r1: 0 });
  });
});

test('a rule can be addressed by its display name when no rule has that id', async () => {
  await withApi(async (req) => {
    await req('POST', '/rules', rule({ id: 'r1', name: 'hot' }));
    await req('POST', '/rules', rule({ id: 'r2', name: 'dup' }));
    await req('POST', '/rules', rule({ id: 'r3', name: 'dup' }));
    assert.equal((await req('GET', '/rules/hot')).json().id, 'r1');
    assert.equal((await req('POST', '/rules/hot/stop')).text, 'Rule r1 was stopped.');
    assert.equal((await req('GET', '/rules/dup')).status, 404, 'an ambiguous name addresses nothing');
  });
});

test('a start whose re-plan fails answers 400 with the planner code', async () => {
  await withApi(async (req, engine) => {
    await req('POST', '/rules', rule({ sql: 'SELECT * FROM s2' }));
    engine.streams.delete('s2');
    const r = await req('POST', '/rules/r1/start');
    assert.equal(r.status, 400);
    assert.deepEqual(r.json(), {
      error: 2101,
      message: 'start rule error: fail to get stream s2, please check if stream is created',
    });
  });
});

test('validate: 200 sources, 422 text for invalid rules and unknown streams, 400 for unreadable bodies', async () => {
  await withApi(async (req) => {
    let r = await req('POST', '/rules/validate', rule());
    assert.equal(r.status, 200);
    assert.equal(r.text, '{"sources":["s1"],"valid":true}');
    assert.match(r.type, /application\/json/);
    r = await req('POST', '/rules/validate', rule({ actions: undefined }));
    assert.equal(r.status, 422);
    assert.equal(r.text, 'invalid rule json: Missing rule actions.');
    r = await req('POST', '/rules/validate', rule({ sql: 'SELECT * FROM s9' }));
    assert.equal(r.status, 422);
    assert.equal(r.text, 's9 is not found');
    r = await req('POST', '/rules/validate', rule({ sql: 'SELECT * FROMM s1 WHERE' }));
    assert.equal(r.status, 422);
    r = await req('POST', '/rules/validate', '{"id": ');
    assert.equal(r.status, 400);
    assert.equal(r.json().error, 1000);
    r = await req('POST', '/rules/validate', '"text"');
    assert.equal(r.status, 400);
  });
});

test('tags over HTTP: PUT resets, PATCH adds, DELETE accepts keys and tags, match takes a GET body', async () => {
  await withApi(async (req) => {
    await req('POST', '/rules', rule());
    await req('POST', '/rules', rule({ id: 'r2' }));
    let r = await req('PUT', '/rules/r1/tags', { tags: ['t1', 't2'] });
    assert.equal(r.status, 200);
    assert.equal(r.text, '');
    await req('PATCH', '/rules/r1/tags', { tags: ['t3', 't1'] });
    await req('PUT', '/rules/r2/tags', { tags: ['t1'] });
    assert.deepEqual((await req('GET', '/rules/r1')).json().tags, ['t1', 't2', 't3']);
    assert.deepEqual((await req('GET', '/rules/tags/match', { keys: ['t1'] })).json(), ['r1', 'r2']);
    assert.deepEqual((await req('GET', '/rules/tags/match', { tags: ['t1'], keys: ['t3'] })).json(), ['r1']);
    assert.deepEqual((await req('GET', '/rules/tags/match')).json(), ['r1', 'r2']);
    r = await req('DELETE', '/rules/r1/tags', { keys: ['t1'] });
    assert.equal(r.status, 200);
    await req('DELETE', '/rules/r1/tags', { tags: ['t2'] });
    assert.deepEqual((await req('GET', '/rules/r1')).json().tags, ['t3']);
    r = await req('PUT', '/rules/r1/tags', '{"tags": [');
    assert.equal(r.status, 400);
    assert.match(r.json().message, /^decode body error: /);
    r = await req('GET', '/rules/tags/match', '{bad');
    assert.equal(r.status, 400);
  });
});

test('update texts: bad body, id mismatch, plan failure keeps the old definition', async () => {
  await withApi(async (req) => {
    await req('POST', '/rules', rule());
    let r = await req('PUT', '/rules/r1', '{');
    assert.equal(r.status, 400);
    assert.match(r.json().message, /^Invalid body: /);
    r = await req('PUT', '/rules/r1', rule({ id: 'other' }));
    assert.deepEqual(r.json(), {
      error: 1000,
      message: 'Update rule error: Invalid rule json: RuleId is not consistent with rule id.',
    });
    r = await req('PUT', '/rules/r1', rule({ sql: 'SELECT * FROM nosuch' }));
    assert.deepEqual(r.json(), {
      error: 2101,
      message: 'Update rule error: fail to get stream nosuch, please check if stream is created',
    });
    assert.equal((await req('GET', '/rules/r1')).json().sql, 'SELECT * FROM s1');
    r = await req('PUT', '/rules/r1', { sql: 'SELECT * FROM s2', actions: [{ log: {} }] });
    assert.equal(r.status, 200, 'the body id may be left out');
  });
});

test('describe: the body as given after create; every effective option once the rule was stopped or started', async () => {
  await withApi(async (req) => {
    await req('POST', '/rules', rule({ options: { qos: 1, restartStrategy: { attempts: 3 } } }));
    assert.deepEqual((await req('GET', '/rules/r1')).json().options, { qos: 1, restartStrategy: { attempts: 3 } });
    assert.equal((await req('POST', '/rules/r1/stop')).status, 200);
    let d = (await req('GET', '/rules/r1')).json();
    assert.equal(d.triggered, false);
    assert.deepEqual(d.options, {
      debug: false,
      logFilename: '',
      isEventTime: false,
      lateTolerance: 1000,
      concurrency: 1,
      bufferLength: 1024,
      sendMetaToSink: false,
      sendError: true,
      qos: 1,
      checkpointInterval: 300000,
      cron: '',
      duration: '',
      restartStrategy: { attempts: 3, delay: 1000, multiplier: 2, maxDelay: 30000, jitterFactor: 0.1 },
      cronDatetimeRange: [],
    });
    assert.equal((await req('POST', '/rules/r1/start')).status, 200);
    d = (await req('GET', '/rules/r1')).json();
    assert.equal(d.triggered, true);
    assert.equal(d.options.bufferLength, 1024);
    assert.equal(d.options.restartStrategy.attempts, 3);
  });
});
