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
