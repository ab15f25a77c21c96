/**
 * At-least-once from an MQTT source to an MQTT sink at qos 1 (docs/runtime.md §1.9) under real faults: Eddy killed
 * with SIGKILL under load and started again on the same home, and the broker connection cut by a TCP proxy on the
 * source side and on the sink side. Each run has its own Mosquitto (sessions of absent clients kept) and counts
 * numbered messages at the sink: none may be lost; duplicates are allowed and reported.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reportFault, runFaultScenario } from '../helpers/faults.js';

test('kill -9 under load at qos 1, restarted on the same home: nothing lost', async (t) => {
  const r = await runFaultScenario({ fault: 'kill9', count: 3000, rate: 1000 });
  reportFault(t, r);
  assert.equal(r.lost, 0);
  assert.equal(r.foreign, 0);
  assert.equal(r.status, 'running');
});

test('broker connection cut on the source side: nothing lost, the rule recovers by itself, no error row as data', async (t) => {
  const r = await runFaultScenario({ fault: 'source-outage', count: 3000, rate: 1000, outageMs: 3000 });
  reportFault(t, r);
  assert.equal(r.lost, 0);
  assert.equal(r.foreign, 0);
  assert.equal(r.status, 'running');
});

test('broker connection cut on the sink side (qos 1, no cache): nothing lost, the rule recovers by itself', async (t) => {
  const r = await runFaultScenario({ fault: 'sink-outage', count: 3000, rate: 1000, outageMs: 3000 });
  reportFault(t, r);
  assert.equal(r.lost, 0);
  assert.equal(r.foreign, 0);
  assert.equal(r.status, 'running');
});

test('kill -9 of a rule reading a SHARED stream at qos 1: nothing lost', async (t) => {
  const r = await runFaultScenario({ fault: 'kill9', count: 3000, rate: 1000, shared: true });
  reportFault(t, r);
  assert.equal(r.lost, 0);
  assert.equal(r.status, 'running');
});

test('broker connection cut on the sink side, sink with enableCache at qos 1: nothing lost', async (t) => {
  const r = await runFaultScenario({ fault: 'sink-outage', count: 3000, rate: 1000, outageMs: 3000, sinkCache: true });
  reportFault(t, r);
  assert.equal(r.lost, 0);
  assert.equal(r.foreign, 0);
  assert.equal(r.status, 'running');
});

test('kill -9 of a rule with a tumbling window at qos 1: nothing lost (window contents come back from the checkpoint)', async (t) => {
  const r = await runFaultScenario({ fault: 'kill9', count: 3000, rate: 1000, window: true });
  reportFault(t, r);
  assert.equal(r.lost, 0);
  assert.equal(r.status, 'running');
});
