/**
 * An MQTT sink at QoS 2 into a Mosquitto with its default `max_inflight_messages` (20): a 3.1.1 client that sends more
 * QoS 2 publishes than that unacknowledged has the excess dropped by the broker, which still completes their handshake.
 * The sink keeps within the window (docs/runtime.md §3.6), so nothing is lost, without a fault and across a kill -9.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reportFault, runFaultScenario } from '../helpers/faults.js';

test('sink QoS 2 into a default Mosquitto, rule qos 1, no fault: nothing lost', async (t) => {
  const r = await runFaultScenario({ fault: 'none', count: 5000, rate: 1000, sinkQos: 2 });
  reportFault(t, r);
  assert.equal(r.lost, 0);
  assert.equal(r.foreign, 0);
  assert.equal(r.status, 'running');
});

test('sink QoS 2 into a default Mosquitto, rule qos 2, kill -9 under load: nothing lost', async (t) => {
  const r = await runFaultScenario({ fault: 'kill9', count: 8000, rate: 2000, sinkQos: 2, ruleQos: 2 });
  reportFault(t, r);
  assert.equal(r.lost, 0);
  assert.equal(r.foreign, 0);
  assert.equal(r.status, 'running');
});
