/**
 * MQTT → MQTT `SELECT * FROM demo WHERE temperature > 50` through the local Mosquitto at 5k and 10k msg/s, QoS 0:
 * an Eddy server and the hand-written mqtt.js program run at the same time in two processes fed by one publisher
 * (the same messages, the same machine load), rounds of both rates interleaved. Prints the CPU µs per input message
 * of each, the median of the per-round ratios with its spread, and the results each lost (expected − received,
 * counted after the output has settled) next to the drops Eddy counted in the rule's metrics. Each round starts
 * with an unmeasured warm-up of half a second of messages.
 */
import {
  QUICK,
  counter,
  demoPassing,
  machineLoad,
  publishDemo,
  spread,
  startEddy,
  startHandFilter,
} from './helpers/procs.js';

interface Round {
  rate: number;
  engineUs: number;
  handUs: number;
  engineLost: number;
  handLost: number;
  engineDrops: number;
}

async function round(rate: number, total: number, tag: string): Promise<Round> {
  const inTopic = `bench/mqtt/${tag}/in`;
  const engineOutTopic = `bench/mqtt/${tag}/eddy`;
  const handOutTopic = `bench/mqtt/${tag}/hand`;
  const [eddy, hand, outE, outH] = await Promise.all([
    startEddy(),
    startHandFilter(inTopic, handOutTopic),
    counter(engineOutTopic),
    counter(handOutTopic),
  ]);
  try {
    let r = await eddy.req('POST', '/streams', {
      sql: `CREATE STREAM demo () WITH (DATASOURCE="${inTopic}", FORMAT="json")`,
    });
    if (r.status !== 201) throw new Error(r.text);
    r = await eddy.req('POST', '/rules', {
      id: 'mq',
      sql: 'SELECT * FROM demo WHERE temperature > 50',
      actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: engineOutTopic, qos: 0 } }],
    });
    if (r.status !== 201) throw new Error(r.text);
    // warm-up (JIT) for both sides, not measured
    const warm = Math.floor(rate / 2);
    await publishDemo([inTopic], rate, warm);
    const warmExpected = demoPassing(warm);
    await Promise.all([outE.settle(warmExpected), outH.settle(warmExpected)]);
    const [warmE, warmH] = [outE.count(), outH.count()];
    const [e0, h0] = await Promise.all([eddy.cpuUs(), hand.cpuUs()]);
    await publishDemo([inTopic], rate, total);
    const expected = demoPassing(total);
    const [gotE, gotH] = (await Promise.all([outE.settle(warmE + expected), outH.settle(warmH + expected)])).map(
      (got, i) => got - [warmE, warmH][i],
    );
    const [e1, h1] = await Promise.all([eddy.cpuUs(), hand.cpuUs()]);
    const status = JSON.parse((await eddy.req('GET', '/rules/mq/status')).text) as Record<string, unknown>;
    if (process.env.BENCH_DEBUG)
      console.error(
        JSON.stringify(
          Object.fromEntries(Object.entries(status).filter(([k]) => /exception|buffer_length|records_in/.test(k))),
        ),
      );
    let drops = 0;
    for (const [k, v] of Object.entries(status))
      if (k.endsWith('_exceptions_total') && typeof v === 'number') drops += v;
    return {
      rate,
      engineUs: (e1 - e0) / total,
      handUs: (h1 - h0) / total,
      engineLost: expected - gotE,
      handLost: expected - gotH,
      engineDrops: drops,
    };
  } finally {
    await Promise.all([eddy.close(), hand.close(), outE.close(), outH.close()]);
  }
}

export async function run(): Promise<Record<string, string | number>> {
  const rounds = QUICK ? 1 : 3;
  const rates = [5000, 10_000];
  const all: Round[] = [];
  const load = await machineLoad();
  for (let i = 0; i < rounds; i++) {
    for (const rate of rates) {
      // 50,000 messages at 10k msg/s (5 s), the same duration at 5k
      const total = QUICK ? rate * 2 : rate * 5;
      all.push(await round(rate, total, `${process.pid}/${Date.now()}/${i}/${rate}`));
    }
  }
  const out: Record<string, string | number> = { 'machine load (1-min average) at start': load };
  for (const rate of rates) {
    const rs = all.filter((r) => r.rate === rate);
    const k = `${rate / 1000}k msg/s`;
    out[`mqtt→mqtt ${k}: messages per round`] = QUICK ? rate * 2 : rate * 5;
    out[`mqtt→mqtt ${k}: CPU µs/message Eddy`] = spread(rs.map((r) => r.engineUs));
    out[`mqtt→mqtt ${k}: CPU µs/message hand-written mqtt.js`] = spread(rs.map((r) => r.handUs));
    out[`mqtt→mqtt ${k}: Eddy / hand-written (per-round ratios)`] = spread(rs.map((r) => r.engineUs / r.handUs));
    out[`mqtt→mqtt ${k}: results lost Eddy (per round)`] = rs.map((r) => r.engineLost).join(' ');
    out[`mqtt→mqtt ${k}: drops counted in Eddy's metrics (per round)`] = rs.map((r) => r.engineDrops).join(' ');
    out[`mqtt→mqtt ${k}: results lost hand-written (per round)`] = rs.map((r) => r.handLost).join(' ');
  }
  return out;
}

const isMain = Boolean(process.argv[1]) && import.meta.url.endsWith(process.argv[1].replace(/.*\/bench\//, '/bench/'));
if (isMain) {
  run()
    .then((f) => {
      for (const [k, v] of Object.entries(f)) console.log(`${k.padEnd(60)} ${v}`);
      process.exit(0);
    })
    .catch((err: unknown) => {
      console.error(err);
      process.exit(1);
    });
}
