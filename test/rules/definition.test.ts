import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  RuleDefError,
  decodeRuleText,
  maskSecrets,
  maskUrl,
  parseRule,
  restoreSecrets,
  type ParseContext,
} from '../../src/rules/definition.js';
import { sqlStatementKind } from '../../src/rules/engine.js';
import { DEFAULTS } from './fixtures.js';

const ctx: ParseContext = { defaults: DEFAULTS, sql: { statementKind: sqlStatementKind } };

function detail(body: unknown, c: Partial<ParseContext> = {}): string {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  try {
    parseRule(decodeRuleText(text), text, { ...ctx, ...c });
  } catch (e) {
    assert.ok(e instanceof RuleDefError, String(e));
    return e.detail;
  }
  assert.fail('expected a RuleDefError');
}

const ok = { id: 'r1', sql: 'SELECT * FROM s1', actions: [{ log: {} }] };

test('bad rule bodies give eKuiper texts', () => {
  assert.match(detail('{"id": '), /^Parse rule \{"id": {2}error : .+\.$/);
  assert.match(
    detail('[1]'),
    /^Parse rule \[1\] error : json: cannot unmarshal array into Go value of type api\.Rule\.$/,
  );
  assert.equal(detail({ sql: 'SELECT * FROM s1', actions: [{ log: {} }] }), 'Missing rule id.');
  assert.equal(detail('null'), 'Missing rule id.');
  assert.equal(detail({ ...ok, id: 'a/b' }), 'ruleID:a/b contains invalidChar:/');
  assert.equal(detail({ ...ok, id: 'a#b' }), 'ruleID:a#b contains invalidChar:#');
  assert.equal(detail({ ...ok, id: 'a%b' }), 'ruleID:a%b contains invalidChar:%');
  assert.equal(detail({ ...ok, id: ' x' }), 'ruleID:  x should be trimed');
  assert.equal(detail({ ...ok, graph: { nodes: {}, topo: {} } }), 'Rule r1 has both sql and graph.');
  assert.equal(detail({ id: 'r1', actions: [{ log: {} }] }), 'Rule r1 has neither sql nor graph.');
  assert.equal(detail({ id: 'r1', sql: 'SELECT * FROM s1' }), 'Missing rule actions.');
  assert.equal(detail({ id: 'r1', sql: 'SELECT * FROM s1', actions: [] }), 'Missing rule actions.');
  assert.match(detail({ ...ok, sql: 'SELECT * FROMM s1 WHERE' }), /^Parse SQL SELECT \* FROMM s1 WHERE error: .+\.$/);
  assert.equal(
    detail({ ...ok, sql: 'CREATE STREAM s1 () WITH (DATASOURCE="t")' }),
    'SQL CREATE STREAM s1 () WITH (DATASOURCE="t") is not a select statement.',
  );
  assert.match(detail({ ...ok, id: 5 }), /cannot unmarshal number 5 into Go struct field Rule\.id of type string/);
});

test('bad options are rejected with `Rule <id> has invalid options: `', () => {
  const bad = (o: unknown) => detail({ ...ok, options: o });
  for (const o of [
    { lateTolerance: -1 },
    { concurrency: -1 },
    { bufferLength: -1 },
    { checkpointInterval: -5 },
    { qos: 3 },
    { restartStrategy: { multiplier: 0 } },
    { restartStrategy: { attempts: -1 } },
    { restartStrategy: { delay: 0 } },
    { restartStrategy: { maxDelay: 0 } },
    { restartStrategy: { jitterFactor: 1 } },
    { restartStrategy: { jitterFactor: 0 } },
    { cronDatetimeRange: [{ begin: '2024-01-02 00:00:00', end: '2024-01-01 00:00:00' }] },
    { cronDatetimeRange: [{ begin: 'yesterday', end: '2024-01-01 00:00:00' }] },
    { cron: 'not a cron', duration: '10s' },
    { cron: '@every 1m', duration: 'ten seconds' },
  ]) {
    assert.match(bad(o), /^Rule r1 has invalid options: .+\.$/s, JSON.stringify(o));
  }
  assert.match(bad({ qos: '1' }), /cannot unmarshal string into Go struct field RuleOption\.options\.qos of type int/);
  assert.match(bad({ bufferLength: 1.5 }), /cannot unmarshal number 1\.5/);
  // beyond a 64-bit int: a decoding error too
  assert.match(
    bad({ bufferLength: 1e20 }),
    /cannot unmarshal number 100000000000000000000 into Go struct field RuleOption\.options\.bufferLength of type int/,
  );
});

test('options merge field-wise over the defaults, restartStrategy per sub-field; fields match case-insensitively', () => {
  const text = JSON.stringify({
    ID: 'r1',
    Sql: 'SELECT * FROM s1',
    actions: [{ log: {} }],
    options: { QOS: 1, restartStrategy: { attempts: 3 } },
  });
  const { def, options } = parseRule(decodeRuleText(text), text, ctx);
  assert.equal(def.id, 'r1');
  assert.equal(options.qos, 1);
  assert.equal(options.bufferLength, 1024);
  assert.equal(options.lateTolerance, 1000);
  assert.deepEqual(options.restartStrategy, {
    attempts: 3,
    delay: 1000,
    multiplier: 2,
    maxDelay: 30000,
    jitterFactor: 0.1,
  });
  assert.deepEqual(def.options, { qos: 1, restartStrategy: { attempts: 3 } }, 'stored options are the ones given');
  assert.equal(def.triggered, true, 'triggered defaults to true');
});

test('update: the path id is the default and a different body id is refused', () => {
  const text = JSON.stringify({ sql: 'SELECT * FROM s1', actions: [{ log: {} }] });
  const { def } = parseRule(decodeRuleText(text), text, { ...ctx, defaultId: 'p1', requireSameId: true });
  assert.equal(def.id, 'p1');
  assert.equal(
    detail({ ...ok, id: 'other' }, { defaultId: 'p1', requireSameId: true }),
    'RuleId is not consistent with rule id.',
  );
});

test('masking: password and token anywhere, URL user-info passwords', () => {
  const masked = maskSecrets({
    actions: [
      { mqtt: { server: 'tcp://b:1883', password: 'pw', Token: 7, nested: { PASSWORD: null } } },
      { sql: { url: 'mysql://app:s3cret@db:3306/x' } },
    ],
  });
  assert.deepEqual(masked, {
    actions: [
      { mqtt: { server: 'tcp://b:1883', password: '******', Token: '******', nested: { PASSWORD: '******' } } },
      { sql: { url: 'mysql://app:******@db:3306/x' } },
    ],
  });
  assert.equal(maskUrl('http://host/path'), 'http://host/path');
  assert.equal(maskUrl('http://user@host/'), 'http://user@host/');
});

test('masked secrets sent back on update are restored from the old rule and from sink config keys', () => {
  const body = {
    actions: [
      { mqtt: { server: 'tcp://b:1883', password: '******', token: 'new' } },
      { log: { password: '******' } },
      { sql: { resourceId: 'db1', url: 'mysql://app:******@db:3306/x', password: '******' } },
    ],
  };
  restoreSecrets(
    body,
    [{ mqtt: { password: 'old-pw', token: 'old-token' } }, { rest: { password: 'x' } }],
    (type, id) =>
      type === 'sql' && id === 'db1' ? { url: 'mysql://app:s3cret@db:3306/x', password: 'dbpw' } : undefined,
  );
  assert.deepEqual(body.actions[0], { mqtt: { server: 'tcp://b:1883', password: 'old-pw', token: 'new' } });
  assert.deepEqual(
    body.actions[1],
    { log: { password: '******' } },
    'a different sink type at that index restores nothing',
  );
  assert.deepEqual(body.actions[2], {
    sql: { resourceId: 'db1', url: 'mysql://app:s3cret@db:3306/x', password: 'dbpw' },
  });
});
