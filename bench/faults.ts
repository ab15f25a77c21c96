/**
 * Fault figures (issue targets): an MQTT → MQTT rule at qos 1 (`SELECT * … WHERE temperature > 50`, checkpoint
 * interval 1 s) in an Eddy child process, numbered messages through a Mosquitto of its own:
 *  1. `kill -9` of Eddy under load at 1,000 and 5,000 msg/s, started again on the same home: lost and duplicates;
 *  2. a 10 s broker outage (TCP proxy cut) on the source side and on the sink side at 1,000 msg/s: lost;
 *  3. for comparison, `kill -9` at 5,000 msg/s of the same rule at qos 0.
 * Runs on request only (`npm run bench -- faults`): it takes about two minutes and needs `mosquitto` on the PATH.
 */
import { runFaultScenario, type FaultResult, type FaultScenario } from '../test/helpers/faults.js';

function line(r: FaultResult): string {
  return `lost ${r.lost}, duplicates ${r.duplicates} (sent ${r.sent}, delivered ${r.delivered}, foreign rows ${r.foreign}, rule ${r.status ?? '?'})`;
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
  ];
  const out: Record<string, string> = {};
  for (const [name, s] of scenarios) {
    const r = await runFaultScenario(s);
    out[name] = line(r);
  }
  return out;
}
