/**
 * At-least-once from an MQTT stream subscribed at QoS 2 (docs/runtime.md §1.9): the PUBREC of each message is held
 * until the checkpoint covering it is saved, so a kill -9 loses nothing the broker counted as received. A file of its
 * own: each test file has a time limit, and the qos 1 scenarios fill mqtt-faults.test.ts's.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reportFault, runFaultScenario } from '../helpers/faults.js';

test('kill -9 of a rule with a tumbling window, the stream subscribed at QoS 2: nothing lost', async (t) => {
  // a window holds up to a second of messages the broker would count as delivered if their PUBREC went out at once
  const r = await runFaultScenario({ fault: 'kill9', count: 3000, rate: 1000, window: true, sourceQos: 2 });
  reportFault(t, r);
  assert.equal(r.lost, 0);
  assert.equal(r.foreign, 0);
  assert.equal(r.status, 'running');
});
