/**
 * Nexmark q4, q6 and q9 (the streams and queries eKuiper runs, with their 30-second tumbling windows and joins)
 * through the local Mosquitto: a seeded generator publishes persons (2 %), auctions (6 %) and bids (92 %) at a fixed
 * rate inside one window, an Eddy server runs the three queries at once and publishes their results over MQTT.
 * Printed: Eddy's CPU, the p99 and max latency of `GET /ping` polled every 50 ms while the windows fill and close,
 * and whether each query's result equals the same query computed here, independently, from the generated events
 * (join, time-range condition, MAX/AVG per group, row_number per partition). Publishing stays clear of the window
 * boundaries, so every event falls in the one window measured.
 * `--quick` uses 10-second windows; EDDY_NEXMARK_RATE sets the rate (default 8,000 msg/s).
 */
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import mqtt from 'mqtt';
import { BROKER_URL, QUICK, machineLoad, percentile, sleep, startEddy } from './helpers/procs.js';

/** The event generator, as source text: the publisher process and the independent check run the same code. */
const GENERATOR = `
function nexmark(seed) {
  let s = seed >>> 0;
  const rnd = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let persons = 0;
  let auctions = 0;
  const base = 1700000000000;
  const states = ['or', 'id', 'ca', 'wa'];
  return (i) => {
    const datetime = base + i * 10;
    const k = i % 50;
    if (k === 0) {
      const id = persons++;
      return ['person', { id, name: 'p' + id, emailAddress: 'p' + id + '@x', creditCard: '1234', city: 'c' + (id % 7), state: states[id % 4], datetime, extra: '' }];
    }
    if (k <= 3) {
      const id = auctions++;
      return ['auction', { id, itemName: 'item' + id, description: 'd', initialBid: 1, reserve: 100, datetime, expires: datetime + 2000 + Math.floor(rnd() * 20000), seller: Math.floor(rnd() * Math.max(1, persons)), category: 1 + Math.floor(rnd() * 5), extra: '' }];
    }
    const auction = Math.max(0, auctions - 1 - Math.floor(rnd() * Math.min(Math.max(auctions, 1), 200)));
    return ['bid', { auction, bidder: Math.floor(rnd() * Math.max(1, persons)), price: 1 + Math.floor(rnd() * 10000), channel: 'web', url: 'http://x/' + auction, datetime, extra: '' }];
  };
}
`;

type Event = [string, Record<string, number | string>];
const nexmark = new Function(`${GENERATOR}; return nexmark;`)() as (seed: number) => (i: number) => Event;

const PUBLISHER = `
${GENERATOR}
const mqtt = require(process.argv[1]);
const [prefix, rate, total, seed] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5])];
const next = nexmark(seed);
const c = mqtt.connect('mqtt://127.0.0.1:1883');
c.on('connect', () => {
  let sent = 0;
  const t0 = Date.now();
  const step = () => {
    const due = Math.min(total, Math.floor(((Date.now() - t0) / 1000) * rate) + Math.ceil(rate / 100));
    while (sent < due) {
      const [topic, obj] = next(sent++);
      c.publish(prefix + topic, JSON.stringify(obj));
    }
    if (sent < total) setTimeout(step, 10);
    else c.end(false, () => process.exit(0));
  };
  step();
});
`;

const STREAMS = [
  'CREATE STREAM bid (auction bigint,bidder bigint,price bigint,channel string,url string,datetime bigint,extra string) WITH (DATASOURCE = "%bid", FORMAT = "json")',
  'CREATE STREAM person (id bigint,name string,emailAddress string,creditCard string,city string,state string,datetime bigint,extra string) WITH (DATASOURCE = "%person", FORMAT = "json")',
  'CREATE STREAM auction (id bigint,itemName string,description string,initialBid bigint,reserve bigint,datetime bigint,expires bigint,seller bigint,category bigint,extra string) WITH (DATASOURCE = "%auction", FORMAT = "json")',
  'CREATE STREAM q4Mem (final bigint, category bigint) WITH (DATASOURCE = "%q4mem", TYPE = "memory")',
];

function queries(w: number): Record<string, { sql: string; memory?: boolean }> {
  return {
    q4a: {
      sql: `SELECT MAX(bid.price) AS final, auction.category FROM auction inner join bid WHERE auction.id = bid.auction AND bid.datetime BETWEEN auction.datetime AND auction.expires group by TUMBLINGWINDOW(ss, ${w}),auction.id, auction.category`,
      memory: true,
    },
    q4: { sql: `SELECT q4Mem.category, AVG(q4Mem.final) FROM q4Mem GROUP BY TUMBLINGWINDOW(ss, ${w}), q4Mem.category` },
    q6: {
      sql: `Select row_number() over (partition by auction.id, auction.seller order by bid.price desc),  auction.id, auction.seller,bid.price,bid.datetime from auction inner join bid on auction.id = bid.auction where bid.datetime >= auction.datetime and bid.datetime <= auction.expires group by tumblingWindow(ss,${w})`,
    },
    q9: {
      sql: `select bid.auction,bid.bidder,bid.price, bid.datetime, bid.extra, row_number() over (partition by auction.id order by bid.price desc, bid.datetime asc) as rownum from auction inner join bid on auction.id = bid.auction and bid.datetime >= auction.datetime and bid.datetime <= auction.expires group by tumblingWindow(ss,${w})`,
    },
  };
}

type Row = Record<string, unknown>;

/** The matching (auction, bid) pairs of the window, computed directly from the generated events. */
function matchedPairs(
  events: Event[],
): Array<{ a: Record<string, number | string>; b: Record<string, number | string> }> {
  const auctions = new Map<number, Record<string, number | string>>();
  for (const [t, o] of events) if (t === 'auction') auctions.set(o.id as number, o);
  const out: Array<{ a: Record<string, number | string>; b: Record<string, number | string> }> = [];
  for (const [t, b] of events) {
    if (t !== 'bid') continue;
    const a = auctions.get(b.auction as number);
    if (a && (b.datetime as number) >= (a.datetime as number) && (b.datetime as number) <= (a.expires as number))
      out.push({ a, b });
  }
  return out;
}

function checkQ4(events: Event[], rows: Row[]): string {
  const finals = new Map<string, { category: number; final: number }>();
  for (const { a, b } of matchedPairs(events)) {
    const k = `${a.id}/${a.category}`;
    const f = finals.get(k);
    if (!f || (b.price as number) > f.final)
      finals.set(k, { category: a.category as number, final: b.price as number });
  }
  const byCat = new Map<number, number[]>();
  for (const f of finals.values()) byCat.set(f.category, [...(byCat.get(f.category) ?? []), f.final]);
  if (rows.length !== byCat.size) return `${rows.length} categories, expected ${byCat.size}`;
  for (const r of rows) {
    const finalsOf = byCat.get(Number(r.category));
    const avg = Object.entries(r).find(([k]) => k !== 'category')?.[1];
    if (!finalsOf) return `unexpected category ${String(r.category)}`;
    const expected = finalsOf.reduce((x, y) => x + y, 0) / finalsOf.length;
    // AVG of integers may be truncated to an integer
    if (typeof avg !== 'number' || Math.abs(avg - expected) > 1)
      return `category ${String(r.category)}: avg ${String(avg)}, expected ${expected.toFixed(3)}`;
  }
  return 'ok';
}

/** q6 and q9: the same joined rows, and row numbers 1..n per partition following the ordering. */
function checkRanked(events: Event[], rows: Row[], q: 'q6' | 'q9'): string {
  const pairs = matchedPairs(events);
  if (rows.length !== pairs.length) return `${rows.length} rows, expected ${pairs.length}`;
  const key = (auction: unknown, price: unknown, datetime: unknown) =>
    `${String(auction)}/${String(price)}/${String(datetime)}`;
  const expected = new Map<string, number>();
  for (const { b } of pairs) {
    const k = key(b.auction, b.price, b.datetime);
    expected.set(k, (expected.get(k) ?? 0) + 1);
  }
  const known = new Set(['id', 'seller', 'price', 'datetime', 'auction', 'bidder', 'extra']);
  const partitions = new Map<string, Array<{ rank: number; price: number; datetime: number }>>();
  for (const r of rows) {
    const auction = q === 'q6' ? r.id : r.auction;
    const k = key(auction, r.price, r.datetime);
    const n = expected.get(k);
    if (!n) return `unexpected row ${JSON.stringify(r)}`;
    expected.set(k, n - 1);
    const rank = Number(q === 'q9' ? r.rownum : Object.entries(r).find(([c]) => !known.has(c))?.[1]);
    const p = q === 'q6' ? `${String(r.id)}/${String(r.seller)}` : String(r.auction);
    partitions.set(p, [...(partitions.get(p) ?? []), { rank, price: Number(r.price), datetime: Number(r.datetime) }]);
  }
  for (const [p, list] of partitions) {
    list.sort((x, y) => x.rank - y.rank);
    for (let i = 0; i < list.length; i++) {
      if (list[i].rank !== i + 1) return `partition ${p}: row numbers ${list.map((x) => x.rank).join(',')}`;
      if (i > 0) {
        const prev = list[i - 1];
        const cur = list[i];
        const ordered =
          prev.price > cur.price || (prev.price === cur.price && (q === 'q6' || prev.datetime <= cur.datetime));
        if (!ordered) return `partition ${p}: rank ${i + 1} out of order`;
      }
    }
  }
  return 'ok';
}

export async function run(): Promise<Record<string, string | number>> {
  const window = QUICK ? 10 : 30;
  const rate = Number(process.env.EDDY_NEXMARK_RATE ?? 8000);
  const seed = 20240611;
  const prefix = `bench/nexmark/${process.pid}/${Date.now()}/`;
  const load = await machineLoad();
  // an Eddy without rules polled the same way: what the machine's load alone does to /ping
  const [eddy, idle] = await Promise.all([startEddy(), startEddy()]);
  const outputs = new Map<string, Row[][]>();
  const sub = await mqtt.connectAsync(BROKER_URL);
  sub.on('message', (topic, payload) => {
    const q = topic.slice(`${prefix}out/`.length);
    const rows = JSON.parse(payload.toString()) as Row[];
    outputs.set(q, [...(outputs.get(q) ?? []), rows]);
  });
  await sub.subscribeAsync(`${prefix}out/#`);
  try {
    for (const ddl of STREAMS) {
      const r = await eddy.req('POST', '/streams', { sql: ddl.replace('%', prefix) });
      if (r.status !== 201) throw new Error(r.text);
    }
    for (const [id, q] of Object.entries(queries(window))) {
      const action = q.memory
        ? { memory: { topic: `${prefix}q4mem` } }
        : { mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${prefix}out/${id}` } };
      const r = await eddy.req('POST', '/rules', { id, sql: q.sql, actions: [action] });
      if (r.status !== 201) throw new Error(r.text);
    }
    // publish inside one window: from 1 s after a boundary until 2 s before the next one at the latest
    const wms = window * 1000;
    const start = Math.ceil((Date.now() + 1000) / wms) * wms + 1000;
    const total = Math.floor(rate * (window - 3));
    await sleep(start - Date.now());
    const c0 = await eddy.cpuUs();
    const t0 = Date.now();
    let polling = true;
    const poll = (target: typeof eddy, into: number[]) =>
      (async () => {
        while (polling) {
          const t = performance.now();
          await target.req('GET', '/ping');
          into.push(performance.now() - t);
          await sleep(50);
        }
      })();
    const pings: number[] = [];
    const idlePings: number[] = [];
    const pollers = Promise.all([poll(eddy, pings), poll(idle, idlePings)]);
    const mqttPath = createRequire(import.meta.url).resolve('mqtt');
    await new Promise<void>((resolve, reject) => {
      const p = spawn(
        process.execPath,
        ['-e', PUBLISHER, mqttPath, prefix, String(rate), String(total), String(seed)],
        { stdio: 'ignore' },
      );
      p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`publisher exited with ${code}`))));
    });
    const published = Date.now();
    // q6 and q9 close with the window, q4's second stage one window later
    const deadline = start + 2 * wms + 20_000;
    while (Date.now() < deadline && !(outputs.has('q4') && outputs.has('q6') && outputs.has('q9'))) await sleep(100);
    await sleep(500);
    polling = false;
    await pollers;
    const c1 = await eddy.cpuUs();
    const wall = Date.now() - t0;

    const gen = nexmark(seed);
    const events: Event[] = [];
    for (let i = 0; i < total; i++) events.push(gen(i));
    const first = (q: string): Row[] | undefined => outputs.get(q)?.[0];
    const verdict = (q: string, check: (rows: Row[]) => string) => {
      const rows = first(q);
      if (!rows) return 'no result';
      const extra = (outputs.get(q)?.length ?? 0) > 1 ? ` (+${(outputs.get(q)?.length ?? 1) - 1} more emissions)` : '';
      return check(rows) + extra;
    };
    const tag = `nexmark ${rate / 1000}k msg/s, ${window} s windows`;
    return {
      'machine load (1-min average) at start': load,
      [`${tag}: events published`]: `${total} in ${((published - t0) / 1000).toFixed(1)} s`,
      [`${tag}: Eddy CPU (% of one core, whole run)`]: ((100 * (c1 - c0)) / 1000 / wall).toFixed(0),
      [`${tag}: GET /ping p99 / max ms (every 50 ms)`]: `${percentile(pings, 99).toFixed(1)} / ${Math.max(...pings).toFixed(1)} (${pings.length} polls)`,
      [`${tag}: GET /ping p99 / max ms of an idle Eddy, same time`]: `${percentile(idlePings, 99).toFixed(1)} / ${Math.max(...idlePings).toFixed(1)}`,
      [`${tag}: q4 result vs independent computation`]: verdict('q4', (rows) => checkQ4(events, rows)),
      [`${tag}: q6 result vs independent computation`]: verdict('q6', (rows) => checkRanked(events, rows, 'q6')),
      [`${tag}: q9 result vs independent computation`]: verdict('q9', (rows) => checkRanked(events, rows, 'q9')),
      [`${tag}: joined rows (q6)`]: first('q6')?.length ?? 0,
    };
  } finally {
    await sub.endAsync();
    await Promise.all([eddy.close(), idle.close()]);
  }
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
