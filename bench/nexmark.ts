/**
 * IN-PROCESS ENGINE, not the server: eKuiper's Nexmark queries (q1–q4, q6–q10 as eKuiper adapted them) on the
 * in-process nexmark source, driven through the topology builder of one process, results into a nop sink (stateless
 * queries) or a memory topic this benchmark reads (windowed ones). Figures are records per CPU-second: the events the rule's sources took in, divided by the CPU time
 * of the whole process (generation, and the recording the result check needs, included) from rule start until the
 * last result has arrived. This is not what eKuiper published (messages/s through MQTT at a CPU share): that
 * comparison is `bench/nexmark-mqtt.ts`, through a real server and Mosquitto, so no eKuiper figure is printed here.
 *
 * Every query's results are checked against the same query computed here, independently, from the events the
 * generators emitted (row counts for every query; the values of q4, q6, q7 and q9): a query with no results or
 * wrong results fails the benchmark.
 *
 * Stateless queries run with an unbounded rate (the generator runs as fast as the rule takes events) for RUN_MS.
 * Windowed queries get one 30-second window's worth of events (at the rate eKuiper held for the query, 2,000/s where
 * it published none), generated in RUN_MS of wall time, while their windows are driven by a manual clock that is
 * then moved on so the window (for two-stage queries, both windows) fires inside the measurement. Windowed joins run
 * in slices between turns of the event loop, so a measurement ends when the checked results have all arrived, not
 * at a quiet spell of the counters (which once ended q6 and q7 before their joins had emitted anything). The
 * generator alone (no rule) is measured too, as the ceiling of any query.
 */
import { tmpdir } from 'node:os';
import pino from 'pino';
import { type RuleTopology } from '../src/runtime/topology.js';
import { ManualClock } from '../src/runtime/clock.js';
import type { ConnectorContext, Props, RuleAction, SourceEvent } from '../src/contracts/index.js';
import type { ValueObject } from '../src/values/value.js';
import { NexmarkSource } from '../src/connectors/generators/nexmark.js';
import { openBenchEngine } from './helpers/engine.js';

const RUN_MS = Number(process.env.NEXMARK_RUN_MS ?? 3000);
const UNBOUNDED_QPS = 100_000_000;
const WINDOW_MS = 30_000;
/** the rates eKuiper held for its windowed queries (messages/s): one window is filled as full */
const HELD: Record<string, number> = { q3: 6_000, q4: 2_000, q6: 2_870 };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

const STREAMS: Record<string, { columns: string; exclude: string }> = {
  bid: {
    columns: 'auction bigint,bidder bigint,price bigint,channel string,url string,datetime bigint,extra string',
    exclude: 'excludePerson: true, excludeAuction: true',
  },
  person: {
    columns:
      'id bigint,name string,emailAddress string,creditCard string,city string,state string,datetime bigint,extra string',
    exclude: 'excludeAuction: true, excludeBid: true',
  },
  auction: {
    columns:
      'id bigint,itemName string,description string,initialBid bigint,reserve bigint,datetime bigint,expires bigint,seller bigint,category bigint,extra string',
    exclude: 'excludePerson: true, excludeBid: true',
  },
};

/**
 * q4 joins auctions and bids without an ON clause: every pair of the window is built before WHERE filters it, so
 * its window is filled at 500 events/s (1/16 of eKuiper's pairs) to finish in seconds.
 */
const WINDOW_RATE: Record<string, number> = { q4: Number(process.env.Q4_RATE ?? 500) };

interface Query {
  name: string;
  /** rules in order; a `-> <topic>` stage publishes to a memory topic read by the stream of the same name */
  stages: Array<{ sql: string; to?: string }>;
  windowed: boolean;
}

/** Events per second of the sequence for a query: a window's worth of its held rate in RUN_MS, or unbounded. */
function qpsOf(q: Query): number {
  if (!q.windowed) return UNBOUNDED_QPS;
  const held = WINDOW_RATE[q.name] ?? HELD[q.name] ?? 2_000;
  return Math.round((held * WINDOW_MS) / RUN_MS);
}

const QUERIES: Query[] = [
  { name: 'q1', windowed: false, stages: [{ sql: 'SELECT auction, 0.9 * price, bidder, datetime FROM bid' }] },
  { name: 'q2', windowed: false, stages: [{ sql: 'SELECT auction, price FROM bid WHERE MOD(auction, 3) > 0' }] },
  {
    name: 'q3',
    windowed: true,
    stages: [
      {
        sql: "SELECT person.name, person.city, person.state, auction.id FROM auction INNER JOIN person on auction.seller = person.id WHERE auction.category = 3 and (person.state = 'or' OR person.state = 'id' OR person.state = 'ca') group by TUMBLINGWINDOW(ss, 30)",
      },
    ],
  },
  {
    name: 'q4',
    windowed: true,
    stages: [
      {
        sql: 'SELECT MAX(bid.price) AS final, auction.category FROM auction inner join bid WHERE auction.id = bid.auction AND bid.datetime BETWEEN auction.datetime AND auction.expires group by TUMBLINGWINDOW(ss, 30),auction.id, auction.category',
        to: 'q4Mem',
      },
      { sql: 'SELECT q4Mem.category, AVG(q4Mem.final) FROM q4Mem GROUP BY TUMBLINGWINDOW(ss, 30), q4Mem.category' },
    ],
  },
  {
    name: 'q6',
    windowed: true,
    stages: [
      {
        sql: 'Select row_number() over (partition by auction.id, auction.seller order by bid.price desc),  auction.id, auction.seller,bid.price,bid.datetime from auction inner join bid on auction.id = bid.auction where bid.datetime >= auction.datetime and bid.datetime <= auction.expires group by tumblingWindow(ss,30)',
      },
    ],
  },
  {
    name: 'q7',
    windowed: true,
    stages: [
      {
        sql: 'select max(price) as maxprice, window_end() as datetime from bid group by TUMBLINGWINDOW(ss,30)',
        to: 'q7Mem',
      },
      {
        sql: 'SELECT bid.auction, bid.price, bid.bidder, bid.datetime, bid.extra from bid inner join q7Mem on bid.price = q7Mem.maxprice where bid.datetime < q7Mem.datetime group by TUMBLINGWINDOW(ss,30)',
      },
    ],
  },
  {
    name: 'q8',
    windowed: true,
    stages: [
      {
        sql: 'select person.id,person.name,window_start() from person inner join auction on person.id = auction.seller group by TUMBLINGWINDOW(ss,30)',
      },
    ],
  },
  {
    name: 'q9',
    windowed: true,
    stages: [
      {
        sql: 'select bid.auction,bid.bidder,bid.price, bid.datetime, bid.extra, row_number() over (partition by auction.id order by bid.price desc, bid.datetime asc) as rownum from auction inner join bid on auction.id = bid.auction and bid.datetime >= auction.datetime and bid.datetime <= auction.expires group by tumblingWindow(ss,30)',
      },
    ],
  },
  {
    name: 'q10',
    windowed: false,
    stages: [
      {
        sql: "SELECT auction, bidder, price, datetime, extra, format_time(datetime, 'yyyy-MM-dd') as f1, format_time(datetime, 'HH:mm') as f2 FROM bid",
      },
    ],
  },
];

function cpuMs(since: NodeJS.CpuUsage): number {
  const c = process.cpuUsage(since);
  return (c.user + c.system) / 1000;
}

/** A nexmark source that keeps what it emitted, for the independent result check. */
class RecordingNexmark extends NexmarkSource {
  kind = '';
  readonly rows: ValueObject[] = [];
  /** rows emitted that pass `count` (stateless queries keep no rows: flat out, they would fill the heap) */
  counted = 0;
  constructor(
    readonly stage: number,
    private readonly count?: (row: ValueObject) => boolean,
  ) {
    super();
  }
  override provision(ctx: ConnectorContext, datasource: string, props: Props): void {
    super.provision(ctx, datasource, props);
    this.kind = props.excludeBid !== true ? 'bid' : props.excludeAuction !== true ? 'auction' : 'person';
  }
  override connect(ctx: ConnectorContext, emit: (ev: SourceEvent) => void): Promise<void> {
    return super.connect(ctx, (ev) => {
      if (!this.count) this.rows.push(ev.payload as ValueObject);
      else if (this.count(ev.payload as ValueObject)) this.counted++;
      emit(ev);
    });
  }
}

type Events = (kind: string, stage?: number) => ValueObject[];
const n = (v: unknown): number => Number(v);

/** What a query must produce: the number of result rows and, where checked, a summary of their values. */
interface Expected {
  rows: number;
  /** a value computed from the result rows, compared with `value` */
  check?: (rows: ValueObject[]) => string;
  value?: string;
}

/** auction ⋈ bid on the auction id, the bid within the auction's lifetime (q4, q6, q9) */
function liveBids(ev: Events): Array<[ValueObject, ValueObject]> {
  const byAuction = new Map<number, ValueObject[]>();
  for (const b of ev('bid')) {
    const list = byAuction.get(n(b.auction));
    if (list) list.push(b);
    else byAuction.set(n(b.auction), [b]);
  }
  const pairs: Array<[ValueObject, ValueObject]> = [];
  for (const a of ev('auction'))
    for (const b of byAuction.get(n(a.id)) ?? [])
      if (n(b.datetime) >= n(a.datetime) && n(b.datetime) <= n(a.expires)) pairs.push([a, b]);
  return pairs;
}

/** the sum of row numbers over partitions of the given sizes (each partition numbers its rows 1..k) */
function rowNumberSum(keys: string[]): number {
  const sizes = new Map<string, number>();
  for (const k of keys) sizes.set(k, (sizes.get(k) ?? 0) + 1);
  let sum = 0;
  for (const k of sizes.values()) sum += (k * (k + 1)) / 2;
  return sum;
}

const sumOf = (field: string) => (rows: ValueObject[]) => String(rows.reduce((a, r) => a + n(r[field]), 0));

function expected(q: string, ev: Events, counted: () => number): Expected {
  switch (q) {
    case 'q1':
    case 'q2':
    case 'q10':
      return { rows: counted() };
    case 'q3': {
      const persons = new Map(ev('person').map((p) => [n(p.id), p]));
      return {
        rows: ev('auction').filter((a) => {
          const p = persons.get(n(a.seller));
          return n(a.category) === 3 && p !== undefined && ['or', 'id', 'ca'].includes(String(p.state));
        }).length,
      };
    }
    case 'q4': {
      const finals = new Map<number, { category: number; max: number }>();
      for (const [a, b] of liveBids(ev)) {
        const f = finals.get(n(a.id));
        if (!f) finals.set(n(a.id), { category: n(a.category), max: n(b.price) });
        else f.max = Math.max(f.max, n(b.price));
      }
      const perCategory = new Map<number, number[]>();
      for (const f of finals.values()) perCategory.set(f.category, [...(perCategory.get(f.category) ?? []), f.max]);
      // AVG of integers is an integer, truncated (as in eKuiper)
      const avgs = [...perCategory.values()].map((xs) => Math.trunc(xs.reduce((a, x) => a + x, 0) / xs.length));
      // the average column is the one that is not the category
      const avgOf = (r: ValueObject) => n(Object.entries(r).find(([k]) => k !== 'category')?.[1]);
      return {
        rows: perCategory.size,
        value: avgs
          .sort((a, b) => a - b)
          .map((x) => x.toFixed(3))
          .join(','),
        check: (rows) =>
          rows
            .map(avgOf)
            .sort((a, b) => a - b)
            .map((x) => x.toFixed(3))
            .join(','),
      };
    }
    case 'q6': {
      const pairs = liveBids(ev);
      return {
        rows: pairs.length,
        value: String(rowNumberSum(pairs.map(([a]) => `${n(a.id)}/${n(a.seller)}`))),
        check: sumOf('row_number'),
      };
    }
    case 'q7': {
      const max = Math.max(...ev('bid', 1).map((b) => n(b.price)));
      const top = ev('bid', 0).filter((b) => n(b.price) === max);
      return { rows: top.length, value: String(max * top.length), check: sumOf('price') };
    }
    case 'q8': {
      const sellers = new Map<number, number>();
      for (const a of ev('auction')) sellers.set(n(a.seller), (sellers.get(n(a.seller)) ?? 0) + 1);
      return { rows: ev('person').reduce((acc, p) => acc + (sellers.get(n(p.id)) ?? 0), 0) };
    }
    case 'q9': {
      const pairs = liveBids(ev);
      return {
        rows: pairs.length,
        value: String(rowNumberSum(pairs.map(([a]) => String(n(a.id))))),
        check: sumOf('rownum'),
      };
    }
    default:
      throw new Error(`no expected results for ${q}`);
  }
}

/** the rows a stateless query's result counts (the others keep every event for the check) */
const COUNTED: Record<string, (row: ValueObject) => boolean> = {
  q1: () => true,
  q2: (b) => n(b.auction) % 3 > 0,
  q10: () => true,
};

interface QueryRun {
  records: number;
  cpuMs: number;
  results: number;
}

async function runQuery(q: Query): Promise<QueryRun> {
  // windows start on a 30 s boundary, so one move of WINDOW_MS closes exactly one window. Each stage has a clock
  // of its own: a later stage's window is closed only once the earlier stage's results have reached it (one shared
  // clock closed both at once, and q7's second stage then joined its bids with nothing)
  const t0 = Math.ceil(Date.now() / WINDOW_MS) * WINDOW_MS;
  const clocks = q.stages.map(() => new ManualClock(t0));
  const engine = await openBenchEngine({ prefix: 'eddy-bench-nexmark-' });
  const { connectors, config, logger } = engine;
  // the generators are kept at hand so they can be stopped before the windows fire; each knows its rule's stage
  const generators: RecordingNexmark[] = [];
  let building = 0;
  connectors.registry.declare({
    ...connectors.registry.declaration('source', 'nexmark')!,
    create: () => {
      const g = new RecordingNexmark(building, COUNTED[q.name]);
      generators.push(g);
      return g;
    },
  });
  const qps = qpsOf(q);
  const ddl = (sql: string) => engine.defineStream(sql);
  for (const [name, s] of Object.entries(STREAMS)) {
    // each stream reads a config key excluding the other kinds
    await connectors.confKeys.put(
      'sources',
      'nexmark',
      name,
      Object.fromEntries([['qps', qps], ...s.exclude.split(', ').map((e) => [e.split(': ')[0], true])]),
    );
    ddl(`create stream ${name} (${s.columns}) WITH (TYPE="nexmark", CONF_KEY="${name}")`);
  }
  for (const st of q.stages) if (st.to) ddl(`create stream ${st.to} () WITH (TYPE="memory", DATASOURCE="${st.to}")`);
  const outTopic = `bench/nexmark/${q.name}/out`;
  const results: ValueObject[] = [];
  const unsubscribe = connectors.memory.subscribe(outTopic, (m) => results.push(m.row));

  const topos: RuleTopology[] = [];
  const start = process.cpuUsage();
  // later stages first, so that they are listening when the earlier ones publish
  for (let i = q.stages.length - 1; i >= 0; i--) {
    const st = q.stages[i];
    // stateless queries count their results at a nop sink (one row per emission): a memory topic's delivery would
    // cost more than the query; windowed ones hand their few emissions to the topic, whose rows are checked
    const actions: RuleAction[] = [st.to || q.windowed ? { memory: { topic: st.to ?? outTopic } } : { nop: {} }];
    building = i;
    const t = engine
      .builderWith(clocks[i])
      .build({ id: `${q.name}_${i}`, sql: st.sql, actions }, { ...config.rule, bufferLength: 102400 }, logger);
    await t.open();
    topos.unshift(t);
  }
  await sleep(RUN_MS);
  for (const g of generators) await g.close({ ruleId: 'bench', logger, dataDir: engine.dataDir });
  // the independent computation is not the engine's work: its CPU is taken out of the measurement
  const beforeCheck = process.cpuUsage();
  const events: Events = (kind, stage) =>
    generators.filter((g) => g.kind === kind && (stage === undefined || g.stage === stage)).flatMap((g) => g.rows);
  const want = expected(q.name, events, () => generators.reduce((a, g) => a + g.counted, 0));
  const checkMs = cpuMs(beforeCheck);
  if (q.windowed) {
    // an earlier stage's results must have reached the next stage before its window is closed in turn
    for (let stage = 0; stage < q.stages.length; stage++) {
      const sink = topos[stage].nodes().at(-1)!;
      const before = sink.recordsIn;
      clocks[stage].advance(WINDOW_MS);
      if (stage < q.stages.length - 1) for (let i = 0; i < 12_000 && sink.recordsIn === before; i++) await sleep(5);
    }
  }
  // the results arrive in slices: wait for them all (a minute at most, then the check below fails)
  const sink = topos.at(-1)!.nodes().at(-1)!;
  const got = () => (q.windowed ? results.length : sink.recordsIn);
  for (let i = 0; i < 12_000 && got() < want.rows; i++) await sleep(5);
  const used = cpuMs(start) - checkMs;
  await sleep(200); // anything beyond the expected rows would be wrong too
  // later stages read the memory topics, not the generators
  const sources = topos.flatMap((t) => t.nodes().filter((n) => n.name.startsWith('source_')));
  const records = sources.filter((n) => !/q\dMem/.test(n.name)).reduce((a, n) => a + n.recordsOut, 0);
  const drops = topos.reduce((a, t) => a + t.nodes().reduce((b, n) => b + n.exceptions, 0), 0);
  unsubscribe();
  for (const t of topos) await t.close();
  await engine.close();
  const problems: string[] = [];
  if (want.rows === 0) problems.push('the events gave the query nothing to produce');
  if (got() !== want.rows) problems.push(`${got()} result rows, expected ${want.rows}`);
  if (want.check && want.check(results) !== want.value)
    problems.push(`result values ${want.check(results)}, expected ${want.value}`);
  if (drops > 0) problems.push(`${drops} exceptions in the rule`);
  if (problems.length > 0) throw new Error(`nexmark ${q.name}: ${problems.join('; ')}`);
  return { records, cpuMs: used, results: got() };
}

/** The generator alone: every kind, no rule, as fast as it goes. */
async function generatorOnly(): Promise<number> {
  const src = new NexmarkSource();
  const ctx = { ruleId: 'bench', logger: pino({ level: 'silent' }), dataDir: tmpdir() };
  src.provision(ctx, '', { qps: UNBOUNDED_QPS, bufferSize: 1024 });
  let count = 0;
  const start = process.cpuUsage();
  await src.connect(ctx, () => count++);
  await sleep(RUN_MS);
  await src.close(ctx);
  return (count / cpuMs(start)) * 1000;
}

export async function run(): Promise<Record<string, string | number>> {
  const os = await import('node:os');
  const out: Record<string, string | number> = {
    measured: 'IN-PROCESS ENGINE (no server, no broker); results checked',
    'machine load (1-min average) at start': os.loadavg()[0].toFixed(2),
  };
  out['generator alone: events per CPU-second'] = fmt(await generatorOnly());
  const filter = process.env.NEXMARK_QUERIES?.split(',');
  for (const q of QUERIES) {
    if (filter && !filter.includes(q.name)) continue;
    const r = await runQuery(q);
    out[`${q.name} records per CPU-second (in-process)`] = fmt((r.records / r.cpuMs) * 1000);
    out[`${q.name} records in / result rows (checked)`] =
      `${r.records} / ${r.results}${q.windowed ? ` (${fmt(qpsOf(q))} events/s for ${RUN_MS} ms)` : ''}`;
  }
  out['machine load (1-min average) at end'] = os.loadavg()[0].toFixed(2);
  return out;
}
