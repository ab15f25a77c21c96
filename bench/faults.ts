/**
 * Fault figures (issue targets): an MQTT → MQTT rule at qos 1 (`SELECT * … WHERE temperature > 50`, checkpoint
 * interval 1 s) in an Eddy child process, numbered messages through a Mosquitto of its own (default
 * `max_inflight_messages`, 20):
 *  1. `kill -9` of Eddy under load at 1,000 and 5,000 msg/s, started again on the same home: lost and duplicates;
 *  2. a 10 s broker outage (TCP proxy cut) on the source side and on the sink side at 1,000 msg/s: lost;
 *  3. for comparison, `kill -9` at 5,000 msg/s of the same rule at qos 0;
 *  4. the sink at QoS 2, with no fault at rule qos 1 and with a `kill -9` at rule qos 2 (the broker's window);
 *  5. `data/` full for 10 s under a window rule (a tmpfs of its own: root only, skipped otherwise);
 *  6. a rest sink without a cache whose target answers 503 for 10 s, at rule qos 1 and, for comparison, qos 0.
 * Runs on request only (`npm run bench -- faults`): it takes about five minutes and needs `mosquitto` on the PATH.
 */
import { runFaultScenario, type FaultResult, type FaultScenario } from '../test/helpers/faults.js';
import { runRestOutage, type Outage } from '../test/helpers/rest-outage.js';
import { canMount } from '../test/helpers/smalldisk.js';

function line(r: FaultResult): string {
  return `lost ${r.lost}, duplicates ${r.duplicates} (sent ${r.sent}, delivered ${r.delivered}, foreign rows ${r.foreign}, rule ${r.status ?? '?'}${r.maxWalBytes !== undefined ? `, largest WAL ${r.maxWalBytes} bytes` : ''})`;
}

export async function run(): Promise<Record<string, string>> {
  const scenarios: Array<[string, FaultScenario]> = [
    ['kill -9 at 1k msg/s, qos 1', { fault: 'kill9', count: 6000, rate: 1000 }],
    ['kill -9 at 5k msg/s, qos 1', { fault: 'kill9', count: 25000, rate: 5000 }],
    // the same fault at qos 0, in the same run: what at-least-once prevents
    ['kill -9 at 5k msg/s, qos 0 (comparison)', { fault: 'kill9', count: 25000, rate: 5000, ruleQos: 0 }],
    [
      '10 s broker outage, source side, 1k msg/s, qos 1',
      { fault: 'source-outage', count: 15000, rate: 1000, outageMs: 10_000 },
    ],
    [
      '10 s broker outage, sink side, 1k msg/s, qos 1',
      { fault: 'sink-outage', count: 15000, rate: 1000, outageMs: 10_000 },
    ],
    ['sink QoS 2, no fault, 1k msg/s, qos 1', { fault: 'none', count: 5000, rate: 1000, sinkQos: 2 }],
    ['sink QoS 2, kill -9 at 2k msg/s, qos 2', { fault: 'kill9', count: 8000, rate: 2000, sinkQos: 2, ruleQos: 2 }],
  ];
  if (canMount())
    scenarios.push([
      'data/ full for 10 s, window rule, 500 msg/s, qos 1',
      {
        fault: 'disk-full',
        dataDiskBytes: 16 * 1024 * 1024,
        count: 10000,
        rate: 500,
        window: true,
        outageMs: 10_000,
      },
    ]);
  const out: Record<string, string> = {};
  for (const [name, s] of scenarios) {
    const r = await runFaultScenario(s);
    out[name] = line(r);
  }
  if (!canMount()) out['data/ full'] = 'skipped: mounting a tmpfs needs root';
  const outages: Array<[string, Outage]> = [
    [
      'rest target 503 for 10 s, no cache, 1k msg/s, qos 1',
      { count: 15000, rate: 1000, outageMs: 10_000, cache: false, ruleQos: 1 },
    ],
    ['the same at qos 0 (comparison)', { count: 15000, rate: 1000, outageMs: 10_000, cache: false, ruleQos: 0 }],
  ];
  for (const [name, o] of outages) {
    const r = await runRestOutage(o);
    out[name] =
      `lost ${o.count - r.distinct}, duplicates ${r.accepted.length - r.distinct} (answered 503: ${r.refused})`;
  }
  return out;
}
