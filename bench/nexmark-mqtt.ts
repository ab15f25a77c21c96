/**
 * Nexmark through the local Mosquitto, as eKuiper published it: for q1, q2, q3, q4 and q6 (eKuiper's published
 * queries) and q9, the highest rate an Eddy holds without loss. A seeded generator publishes persons (2 %), auctions
 * (6 %) and bids (92 %); one query at a time runs on a fresh Eddy server and publishes its results over MQTT; the rate
 * steps up (2k, 4k, 8k, 12k, 16k, 24k msg/s, EDDY_NEXMARK_RATES overrides) and stops at the first failing step. A step
 * passes when every result equals the same query computed here, independently, from the generated events (q1/q2:
 * every bid's row, by sequence; windowed queries: the join, time-range condition, MAX/AVG per group, row_number per
 * partition) and the p99 of `GET /ping`, polled every 50 ms, stays at or under 100 ms. The windows are 10 seconds
 * long (what `--quick` uses elsewhere) so the search stays short; windowed steps run back to back, one per window,
 * publishing clear of its boundaries. Printed per query: the highest passing rate, Eddy's CPU there, the ratio to
 * eKuiper's figure, and where the first failing step's limit came from (publisher, broker or Eddy).
 * EDDY_NEXMARK_QUERIES=q1,q4 runs a subset.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import mqtt from 'mqtt';
import { BROKER_URL, machineLoad, percentile, sleep, startEddy } from './helpers/procs.js';

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
    else c.end(false, () => { const u = process.cpuUsage(); process.stdout.write(JSON.stringify({ ms: Date.now() - t0, cpuUs: u.user + u.system })); process.exit(0); });
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

/** q1 and q2: one output row per bid (q2: per bid with MOD(auction, 3) > 0), each equal to the bid's projection. */
function checkProjection(events: Event[], rows: Row[], q: 'q1' | 'q2'): string {
  const key = (auction: unknown, price: unknown) => `${String(auction)}/${String(price)}`;
  const expected = new Map<string, number>();
  let count = 0;
  for (const [t, b] of events) {
    if (t !== 'bid') continue;
    if (q === 'q1') expected.set(String(b.datetime), b.price as number);
    else if ((b.auction as number) % 3 > 0) {
      const k = key(b.auction, b.price);
      expected.set(k, (expected.get(k) ?? 0) + 1);
    }
    if (q === 'q1' || (b.auction as number) % 3 > 0) count++;
  }
  if (rows.length !== count) return `${rows.length} rows, expected ${count}`;
  for (const r of rows) {
    if (q === 'q1') {
      // datetime is the event's sequence number times 10: it names the input row
      const price = expected.get(String(r.datetime));
      const scaled = Object.entries(r).find(([c]) => !['auction', 'bidder', 'datetime'].includes(c))?.[1];
      if (price === undefined) return `unexpected or repeated row ${JSON.stringify(r)}`;
      if (typeof scaled !== 'number' || Math.abs(scaled - 0.9 * price) > 1e-6) return `row ${JSON.stringify(r)}`;
      expected.delete(String(r.datetime));
    } else {
      const k = key(r.auction, r.price);
      const n = expected.get(k);
      if (!n) return `unexpected row ${JSON.stringify(r)}`;
      expected.set(k, n - 1);
    }
  }
  return 'ok';
}

/** q3: auctions of category 3 joined with their seller when the seller lives in or, id or ca. */
function checkQ3(events: Event[], rows: Row[]): string {
  const persons = new Map<number, Record<string, number | string>>();
  const expected = new Map<string, number>();
  const key = (name: unknown, city: unknown, state: unknown, id: unknown) =>
    `${String(name)}/${String(city)}/${String(state)}/${String(id)}`;
  for (const [t, o] of events) if (t === 'person') persons.set(o.id as number, o);
  let count = 0;
  for (const [t, a] of events) {
    const p = t === 'auction' && a.category === 3 ? persons.get(a.seller as number) : undefined;
    if (!p || !['or', 'id', 'ca'].includes(p.state as string)) continue;
    const k = key(p.name, p.city, p.state, a.id);
    expected.set(k, (expected.get(k) ?? 0) + 1);
    count++;
  }
  if (rows.length !== count) return `${rows.length} rows, expected ${count}`;
  for (const r of rows) {
    const k = key(r.name, r.city, r.state, r.id);
    const n = expected.get(k);
    if (!n) return `unexpected row ${JSON.stringify(r)}`;
    expected.set(k, n - 1);
  }
  return 'ok';
}

interface Query {
  /** the rules, in creation order; the last one publishes the result */
  stages: string[];
  /** eKuiper's published figure, msg/s */
  ekuiper?: number;
  /** windows between the window the events fall in and the one whose close emits the result */
  lag?: number;
  check(events: Event[], rows: Row[]): string;
}

function sweepQueries(w: number): Record<string, Query> {
  const q = queries(w);
  return {
    q1: {
      stages: ['SELECT auction, 0.9 * price, bidder, datetime FROM bid'],
      ekuiper: 11_400,
      check: (e, r) => checkProjection(e, r, 'q1'),
    },
    q2: {
      stages: ['SELECT auction, price FROM bid WHERE MOD(auction, 3) > 0'],
      ekuiper: 7_000,
      check: (e, r) => checkProjection(e, r, 'q2'),
    },
    q3: {
      stages: [
        `SELECT person.name, person.city, person.state, auction.id FROM auction INNER JOIN person on auction.seller = person.id WHERE auction.category = 3 and (person.state = 'or' OR person.state = 'id' OR person.state = 'ca') group by TUMBLINGWINDOW(ss, ${w})`,
      ],
      ekuiper: 6_000,
      check: checkQ3,
    },
    q4: { stages: [q.q4a.sql, q.q4.sql], ekuiper: 2_000, lag: 1, check: checkQ4 },
    q6: { stages: [q.q6.sql], ekuiper: 2_870, check: (e, r) => checkRanked(e, r, 'q6') },
    q9: { stages: [q.q9.sql], check: (e, r) => checkRanked(e, r, 'q9') },
  };
}

/** CPU µs the local Mosquitto used so far (it is shared with everything else on the machine), or undefined. */
function brokerCpuUs(): number | undefined {
  const pid = spawnSync('pgrep', ['-x', 'mosquitto'], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
  if (!pid) return undefined;
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    // utime and stime are fields 14 and 15 of stat, in clock ticks of 10 ms
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return undefined;
  }
}

interface Published {
  ms: number;
  cpuUs: number;
}

async function publish(prefix: string, rate: number, total: number, seed: number): Promise<Published> {
  const mqttPath = createRequire(import.meta.url).resolve('mqtt');
  return new Promise<Published>((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', PUBLISHER, mqttPath, prefix, String(rate), String(total), String(seed)], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.on('exit', (code) =>
      code === 0 ? resolve(JSON.parse(out) as Published) : reject(new Error(`publisher exited with ${code}`)),
    );
  });
}

interface Step {
  rate: number;
  start: number;
  total: number;
  pub?: Published;
  eddyCpu?: number;
  brokerCpu?: number;
  p99?: number;
  /** the same p99 of an Eddy without rules polled at the same time: what the machine's load alone does */
  idleP99?: number;
  verdict?: string;
}

const stepPassed = (s: Step): boolean => s.verdict === 'ok' && (s.p99 ?? Infinity) <= 100;

function describe(s: Step): string {
  const cpu = s.eddyCpu === undefined ? '' : ` Eddy ${s.eddyCpu.toFixed(0)}%`;
  const broker = s.brokerCpu === undefined ? '' : ` broker ${s.brokerCpu.toFixed(0)}%`;
  const pub = s.pub ? ` pub ${((s.total * 1000) / s.pub.ms / 1000).toFixed(1)}k/s` : '';
  const res = s.verdict === 'ok' ? 'ok' : `WRONG (${s.verdict ?? 'undecided'})`;
  return `${s.rate / 1000}k: ${res}, p99 ${s.p99?.toFixed(0) ?? '?'} ms (idle Eddy ${s.idleP99?.toFixed(0) ?? '?'}),${cpu}${broker}${pub}`;
}

/** Where the first failing step's limit came from: the publisher fell behind, the broker ran out of its one core, or Eddy. */
function limitOf(s: Step): string {
  const pubRate = s.pub ? (s.total * 1000) / s.pub.ms : 0;
  if (pubRate < 0.95 * s.rate) return `publisher (reached ${(pubRate / 1000).toFixed(1)}k msg/s)`;
  if ((s.brokerCpu ?? 0) >= 85) return `broker (Mosquitto ${s.brokerCpu?.toFixed(0)}% of its one core)`;
  const cpu = `CPU ${s.eddyCpu?.toFixed(0) ?? '?'}% of a core`;
  if (s.verdict !== 'ok') return `Eddy, ${cpu} (results lost or wrong: ${s.verdict ?? ''})`;
  // /ping slow for an Eddy without rules as well: the machine's other load, not this query
  if ((s.idleP99 ?? 0) > 100)
    return `machine load (/ping p99 ${s.p99?.toFixed(0)} ms, idle Eddy ${s.idleP99?.toFixed(0)} ms; Eddy ${cpu})`;
  return `Eddy, ${cpu} (/ping p99 ${s.p99?.toFixed(0)} ms, idle Eddy ${s.idleP99?.toFixed(0)} ms)`;
}

/** Runs one query's step search on a fresh Eddy; steps stop at the first failure. */
async function sweep(name: string, query: Query, rates: number[], wms: number): Promise<Step[]> {
  const seed = 20240611;
  const prefix = `bench/nexmark/${process.pid}/${Date.now()}/${name}/`;
  const [eddy, idle] = await Promise.all([startEddy(), startEddy()]);
  const emissions: Array<{ t: number; rows: Row[] }> = [];
  const sub = await mqtt.connectAsync(BROKER_URL);
  sub.on('message', (_topic, payload) => {
    const parsed = JSON.parse(payload.toString()) as Row[] | Row;
    emissions.push({ t: Date.now(), rows: Array.isArray(parsed) ? parsed : [parsed] });
  });
  await sub.subscribeAsync(`${prefix}out`);
  const pings: Array<{ t: number; ms: number }> = [];
  const idlePings: Array<{ t: number; ms: number }> = [];
  let polling = true;
  const poll = async (target: typeof eddy, into: typeof pings) => {
    while (polling) {
      const t = performance.now();
      await target.req('GET', '/ping');
      into.push({ t: Date.now(), ms: performance.now() - t });
      await sleep(50);
    }
  };
  const poller = Promise.all([poll(eddy, pings), poll(idle, idlePings)]);
  const steps: Step[] = [];
  const eventsOf = (total: number): Event[] => {
    const gen = nexmark(seed);
    return Array.from({ length: total }, (_, i) => gen(i));
  };
  const measure = async (s: Step, from: { t: number; eddy: number; broker?: number }) => {
    const [eddyUs, brokerUs, t] = [await eddy.cpuUs(), brokerCpuUs(), Date.now()];
    s.eddyCpu = (100 * (eddyUs - from.eddy)) / 1000 / (t - from.t);
    if (brokerUs !== undefined && from.broker !== undefined)
      s.brokerCpu = (100 * (brokerUs - from.broker)) / 1000 / (t - from.t);
    const p99Of = (xs: typeof pings) =>
      percentile(
        xs.filter((p) => p.t >= from.t && p.t <= t).map((p) => p.ms),
        99,
      );
    s.p99 = p99Of(pings);
    s.idleP99 = p99Of(idlePings);
  };
  const mark = async () => ({ t: Date.now(), eddy: await eddy.cpuUs(), broker: brokerCpuUs() });
  try {
    for (const ddl of STREAMS) {
      const r = await eddy.req('POST', '/streams', { sql: ddl.replace('%', prefix) });
      if (r.status !== 201) throw new Error(r.text);
    }
    for (const [i, sql] of query.stages.entries()) {
      const last = i === query.stages.length - 1;
      const action = last
        ? { mqtt: { server: 'tcp://127.0.0.1:1883', topic: `${prefix}out` } }
        : { memory: { topic: `${prefix}q4mem` } };
      const r = await eddy.req('POST', '/rules', { id: `${name}_${i}`, sql, actions: [action] });
      if (r.status !== 201) throw new Error(r.text);
    }
    const windowed = /TUMBLINGWINDOW/i.test(query.stages[0]);
    if (!windowed) {
      // the rule subscribes asynchronously: probe with single bids until one comes out, so no step loses its first rows
      const probe = JSON.stringify({
        auction: 1,
        bidder: 0,
        price: 1,
        channel: 'web',
        url: '',
        datetime: 0,
        extra: '',
      });
      for (let i = 0; i < 100 && emissions.length === 0; i++) {
        await sub.publishAsync(`${prefix}bid`, probe);
        await sleep(200);
      }
      await sleep(300);
      // one step after the other: publish for half a window, then wait for every row
      for (const rate of rates) {
        const total = Math.floor((rate * wms) / 2000);
        const s: Step = { rate, start: Date.now(), total };
        steps.push(s);
        emissions.length = 0;
        const from = await mark();
        s.pub = await publish(prefix, rate, total, seed);
        const expected = query.check(eventsOf(total), []).match(/expected (\d+)/)?.[1];
        const until = Date.now() + 3000;
        const received = () => emissions.reduce((n, e) => n + e.rows.length, 0);
        while (Date.now() < until && received() < Number(expected ?? 0)) await sleep(50);
        await sleep(200);
        await measure(s, from);
        s.verdict = query.check(
          eventsOf(total),
          emissions.flatMap((e) => e.rows),
        );
        if (!stepPassed(s)) break;
      }
      return steps;
    }
    // windowed: one step per window, back to back; each step's events fall inside its window and its result comes
    // with the window's close (q4's second stage one window later), so a step is judged while the next one runs
    const lag = query.lag ?? 0;
    const resultsOf = (s: Step): Row[] | undefined => {
      const closes = s.start - 1000 + wms * (1 + lag);
      const e = emissions.filter((x) => x.t >= closes && x.t < closes + wms);
      return e.length ? e.flatMap((x) => x.rows) : undefined;
    };
    const judge = (s: Step, final: boolean): void => {
      if (s.verdict !== undefined) return;
      const rows = resultsOf(s);
      const due = s.start - 1000 + wms * (2 + lag);
      if (rows) s.verdict = query.check(eventsOf(s.total), rows);
      else if (final || Date.now() > due) s.verdict = 'no result';
    };
    let boundary = Math.ceil((Date.now() + 1000) / wms) * wms;
    let from: Awaited<ReturnType<typeof mark>> | undefined;
    for (const rate of rates) {
      const s: Step = { rate, start: boundary + 1000, total: Math.floor((rate * (wms - 3000)) / 1000) };
      await sleep(s.start - Date.now());
      const prev = steps.at(-1);
      const now = await mark();
      if (prev && from) await measure(prev, from);
      from = now;
      for (const x of steps) judge(x, false);
      if (steps.some((x) => (x.verdict !== undefined && x.verdict !== 'ok') || (x.p99 ?? 0) > 100)) break;
      steps.push(s);
      s.pub = await publish(prefix, rate, s.total, seed);
      boundary += wms;
    }
    const last = steps.at(-1);
    if (last && from && last.eddyCpu === undefined) {
      await sleep(last.start + wms - Date.now());
      await measure(last, from);
    }
    const deadline = (last?.start ?? 0) - 1000 + wms * (1 + lag) + 5000;
    while (Date.now() < deadline && steps.some((x) => x.verdict === undefined && !resultsOf(x))) await sleep(100);
    await sleep(300);
    for (const x of steps) judge(x, true);
    return steps;
  } finally {
    polling = false;
    await poller;
    await sub.endAsync();
    await Promise.all([eddy.close(), idle.close()]);
  }
}

export async function run(): Promise<Record<string, string | number>> {
  // the search always uses 10-second windows (the --quick setting): 30-second ones would take about 20 minutes
  const wms = 10_000;
  const rates = (process.env.EDDY_NEXMARK_RATES ?? '2000,4000,8000,12000,16000,24000').split(',').map(Number);
  const only = process.env.EDDY_NEXMARK_QUERIES?.split(',');
  const figures: Record<string, string | number> = {
    'machine load (1-min average) at start': await machineLoad(),
    'Nexmark through Mosquitto: step search': `${rates.map((r) => r / 1000 + 'k').join(', ')} msg/s (mixed events, 92 % bids), ${wms / 1000} s windows, one query at a time on a fresh Eddy; a step passes when every result equals the independent computation and GET /ping p99 <= 100 ms`,
  };
  for (const [name, query] of Object.entries(sweepQueries(wms / 1000))) {
    if (only && !only.includes(name)) continue;
    const steps = await sweep(name, query, rates, wms);
    const failedAt = steps.findIndex((s) => !stepPassed(s));
    const failed = failedAt < 0 ? undefined : steps[failedAt];
    const best = (failedAt < 0 ? steps : steps.slice(0, failedAt)).at(-1);
    const ratio = !query.ekuiper
      ? 'no eKuiper figure'
      : `${best ? '' : '< '}${((best?.rate ?? rates[0]) / query.ekuiper).toFixed(2)}x eKuiper's ${query.ekuiper / 1000}k`;
    const held = best
      ? `${best.rate / 1000}k msg/s${failed ? '' : ' (highest step tried)'}`
      : `below ${rates[0] / 1000}k`;
    figures[`${name}: highest rate held, Eddy CPU there, vs eKuiper, limit`] =
      `${held} | ${best?.eddyCpu?.toFixed(0) ?? '?'}% | ${ratio} | ${failed ? limitOf(failed) : 'not reached'}`;
    figures[`${name}: steps`] = steps.map(describe).join('; ');
  }
  return figures;
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
