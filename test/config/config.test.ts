import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyEnvOverrides, loadConfig, prepareHome, resolveHome, typeEnvValue } from '../../src/config/index.js';

test('a new home gets the shipped etc/ and the data folders', () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-home-'));
  try {
    const home = resolveHome(dir);
    prepareHome(home);
    assert.ok(existsSync(join(dir, 'etc', 'kuiper.yaml')));
    for (const d of ['uploads', 'sources', 'sinks', 'services', 'connections'])
      assert.ok(existsSync(join(dir, 'data', d)), d);
    const cfg = loadConfig(home, {});
    assert.equal(cfg.basic.restPort, 9081);
    assert.equal(cfg.source.httpServerPort, 10081);
    assert.equal(cfg.store.type, 'sqlite');
    assert.equal(cfg.rule.bufferLength, 1024);
    assert.equal(cfg.rule.sendError, true);
    assert.deepEqual(cfg.rule.restartStrategy, {
      attempts: 0,
      delay: 1000,
      multiplier: 2,
      maxDelay: 30000,
      jitterFactor: 0.1,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('KUIPER__SECTION__KEY overrides any key, case-insensitively, typed by content', () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-home-'));
  try {
    const home = resolveHome(dir);
    prepareHome(home);
    const cfg = loadConfig(home, {
      KUIPER__BASIC__RESTPORT: '9091',
      KUIPER__BASIC__AUTHENTICATION: 'true',
      KUIPER__RULE__RESTARTSTRATEGY__ATTEMPTS: '3',
      KUIPER__STORE__TYPE: 'redis',
      KUIPER__NEWSECTION__SOMEKEY: '1.5',
    });
    assert.equal(cfg.basic.restPort, 9091);
    assert.equal(cfg.basic.authentication, true);
    assert.equal(cfg.rule.restartStrategy.attempts, 3);
    assert.equal(cfg.rule.restartStrategy.delay, 1000, 'sibling keys keep their defaults');
    assert.equal(cfg.store.type, 'redis');
    assert.deepEqual(cfg.raw.newsection, { somekey: 1.5 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the home kuiper.yaml wins over shipped defaults, env wins over both', () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-home-'));
  try {
    const home = resolveHome(dir);
    prepareHome(home);
    writeFileSync(join(home.etc, 'kuiper.yaml'), 'basic:\n  restPort: 7000\n  logLevel: debug\n');
    assert.equal(loadConfig(home, {}).basic.restPort, 7000);
    assert.equal(loadConfig(home, {}).basic.prometheusPort, 20499, 'keys missing from the home file keep defaults');
    assert.equal(loadConfig(home, { KUIPER__BASIC__RESTPORT: '7001' }).basic.restPort, 7001);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('environment values are typed as eKuiper types them', () => {
  assert.equal(typeEnvValue('42'), 42);
  assert.equal(typeEnvValue('TRUE'), true);
  assert.equal(typeEnvValue('2.5'), 2.5);
  assert.equal(typeEnvValue('tcp://b:1883'), 'tcp://b:1883');
  assert.deepEqual(typeEnvValue('[a,b,1]'), ['a', 'b', 1]);
  const tree = applyEnvOverrides({ default: { server: 'x' } }, 'MQTT_SOURCE', {
    MQTT_SOURCE__DEFAULT__SERVER: 'tcp://y:1883',
  });
  assert.deepEqual(tree, { default: { server: 'tcp://y:1883' } });
});

test('unknown and unimplemented settings are named at start, from kuiper.yaml and from KUIPER__ variables', () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-home-'));
  try {
    const home = resolveHome(dir);
    prepareHome(home);
    assert.deepEqual(loadConfig(home, {}).warnings, [], 'the shipped kuiper.yaml is all known');
    assert.deepEqual(
      loadConfig(home, { KUIPER__BASIC__RESTPORT: '9091', KUIPER__RULE__RESTARTSTRATEGY__ATTEMPTS: '3' }).warnings,
      [],
    );
    const typo = loadConfig(home, { KUIPER__BASIC__RESTPROT: '1' }).warnings;
    assert.deepEqual(typo, [
      'KUIPER__BASIC__RESTPROT: unknown setting basic.restprot (did you mean basic.restPort?); it is ignored',
    ]);
    writeFileSync(
      join(home.etc, 'kuiper.yaml'),
      [
        'basic:',
        '  consoleLogg: true',
        '  pprof: false',
        '  syslog:',
        '    enable: true',
        '    network: udp',
        'store:',
        '  redis:',
        '    database: 2',
        'sink:',
        '  enableCache: true',
        'nosuchsection:',
        '  a: 1',
        '',
      ].join('\n'),
    );
    const w = loadConfig(home, { KUIPER__OPENTELEMETRY__ENABLEREMOTECOLLECTOR: 'true' }).warnings;
    assert.deepEqual(w, [
      'etc/kuiper.yaml: unknown setting basic.consoleLogg (did you mean basic.consoleLog?); it is ignored',
      'etc/kuiper.yaml: basic.syslog.enable is not supported by Eddy (there is no syslog output; use the console log and the service manager); it is ignored',
      'etc/kuiper.yaml: unknown setting store.redis.database; it is ignored',
      'etc/kuiper.yaml: unknown setting nosuchsection; it is ignored',
      'KUIPER__OPENTELEMETRY__ENABLEREMOTECOLLECTOR: openTelemetry.enableRemoteCollector is not supported by Eddy (there is no OpenTelemetry export); it is ignored',
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('store.redis.database is no setting: the Redis database is store.redis.db alone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-home-'));
  try {
    const home = resolveHome(dir);
    prepareHome(home);
    const cfg = loadConfig(home, { KUIPER__STORE__REDIS__DB: '3', KUIPER__STORE__REDIS__DATABASE: '5' });
    assert.equal(cfg.store.redis.db, 3);
    assert.match(cfg.warnings.join('\n'), /KUIPER__STORE__REDIS__DATABASE: unknown setting store\.redis\.database/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
