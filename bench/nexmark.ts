/**
 * eKuiper's Nexmark queries (q1–q4, q6–q10 as eKuiper adapted them) on the in-process nexmark source, results into
 * nop sinks. Figures are records per CPU-second: the events the rule's sources took in, divided by the CPU time of
 * the whole process (generation included) from rule start until its last window has been emitted.
 *
 * Stateless queries run with an unbounded rate (the generator runs as fast as the rule takes events). Windowed
 * queries get one 30-second window's worth of events at the rate eKuiper held for that query (2,000/s where it
 * published none), generated in RUN_MS of wall time, while their windows are driven by a manual clock that is then
 * moved on so the window (for two-stage queries, both windows) fires inside the measurement: the join and
 * aggregation at window end are counted, on a window as full as eKuiper's. eKuiper's published rate divided by its
 * CPU share gives its records per CPU-second, printed alongside (its figure includes MQTT in and out; ours includes
 * generating the events). The generator alone (no rule) is measured too, as the ceiling of any query.
 */
import { tmpdir } from 'node:os';
import pino from 'pino';
import { type RuleTopology } from '../src/runtime/topology.js';
import { ManualClock } from '../src/runtime/clock.js';
import type { RuleAction } from '../src/contracts/index.js';
import { NexmarkSource } from '../src/connectors/generators/nexmark.js';
import { openBenchEngine } from './helpers/engine.js';

const RUN_MS = Number(process.env.NEXMARK_RUN_MS ?? 3000);
const UNBOUNDED_QPS = 100_000_000;
const WINDOW_MS = 30_000;
/** eKuiper's published figures (messages/s, CPU share) per query, docs/connectors.md nexmark */
const EKUIPER: Record<string, [number, number]> = {
  q1: [11_400, 2.0],
  q2: [7_000, 2.0],
  q3: [6_000, 1.68],
  q4: [2_000, 1.44],
  q6: [2_870, 1.78],
};

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
  const held = WINDOW_RATE[q.name] ?? EKUIPER[q.name]?.[0] ?? 2_000;
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

/** Waits until no node of the rule has taken in anything for 50 ms (the window's output has gone through). */
async function settled(t: RuleTopology): Promise<void> {
  const sum = () => t.nodes().reduce((a, n) => a + n.recordsIn + n.recordsOut, 0);
  let last = -1;
  for (let i = 0; i < 400; i++) {
    const now = sum();
    if (now === last) return;
    last = now;
    await sleep(50);
  }
}

async function runQuery(q: Query): Promise<{ records: number; cpuMs: number; results: number; drops: number }> {
  // windows start on a 30 s boundary, so one move of WINDOW_MS closes exactly one window
  const clock = new ManualClock(Math.ceil(Date.now() / WINDOW_MS) * WINDOW_MS);
  const engine = await openBenchEngine({ clock, prefix: 'eddy-bench-nexmark-' });
  const { connectors, config, logger, builder } = engine;
  // the generators are kept at hand so they can be stopped before the windows fire
  const generators: NexmarkSource[] = [];
  connectors.registry.declare({
    ...connectors.registry.declaration('source', 'nexmark')!,
    create: () => {
      const g = new NexmarkSource();
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

  const topos: RuleTopology[] = [];
  const start = process.cpuUsage();
  // later stages first, so that they are listening when the earlier ones publish
  for (let i = q.stages.length - 1; i >= 0; i--) {
    const st = q.stages[i];
    const actions: RuleAction[] = [st.to ? { memory: { topic: st.to } } : { nop: {} }];
    const t = builder.build(
      { id: `${q.name}_${i}`, sql: st.sql, actions },
      { ...config.rule, bufferLength: 102400 },
      logger,
    );
    await t.open();
    topos.unshift(t);
  }
  await sleep(RUN_MS);
  if (q.windowed) for (const g of generators) await g.close({ ruleId: 'bench', logger, dataDir: engine.dataDir });
  const sources = topos.flatMap((t) => t.nodes().filter((n) => n.name.startsWith('source_')));
  const sinks = topos.map((t) => t.nodes().at(-1)!);
  if (q.windowed) {
    for (let stage = 0; stage < q.stages.length; stage++) {
      const window = topos[stage].nodes().find((n) => n.name.endsWith('_window'));
      const before = window?.recordsOut ?? 0;
      clock.advance(WINDOW_MS);
      for (let i = 0; i < 2000 && window && window.recordsOut === before; i++) await sleep(5);
      await settled(topos[stage]);
    }
  } else {
    await sleep(20);
  }
  const used = cpuMs(start);
  // later stages read the memory topics, not the generators
  const records = sources.filter((n) => !/q\dMem/.test(n.name)).reduce((a, n) => a + n.recordsOut, 0);
  const results = sinks.at(-1)!.recordsIn;
  const drops = topos.reduce((a, t) => a + t.nodes().reduce((b, n) => b + n.exceptions, 0), 0);
  for (const t of topos) await t.close();
  await engine.close();
  return { records, cpuMs: used, results, drops };
}

/** The generator alone: every kind, no rule, as fast as it goes. */
async function generatorOnly(): Promise<number> {
  const src = new NexmarkSource();
  const ctx = { ruleId: 'bench', logger: pino({ level: 'silent' }), dataDir: tmpdir() };
  src.provision(ctx, '', { qps: UNBOUNDED_QPS, bufferSize: 1024 });
  let n = 0;
  const start = process.cpuUsage();
  await src.connect(ctx, () => n++);
  await sleep(RUN_MS);
  await src.close(ctx);
  return (n / cpuMs(start)) * 1000;
}

export async function run(): Promise<Record<string, string | number>> {
  const out: Record<string, string | number> = {};
  out['generator alone: events per CPU-second'] = fmt(await generatorOnly());
  const filter = process.env.NEXMARK_QUERIES?.split(',');
  for (const q of QUERIES) {
    if (filter && !filter.includes(q.name)) continue;
    const r = await runQuery(q);
    const ek = EKUIPER[q.name];
    const theirs = ek ? `; eKuiper ${fmt(ek[0] / ek[1])}` : '';
    out[`${q.name} records per CPU-second`] = `${fmt((r.records / r.cpuMs) * 1000)}${theirs}`;
    out[`${q.name} records in / results out / drops`] =
      `${r.records} / ${r.results} / ${r.drops}${q.windowed ? ` (${fmt(qpsOf(q))} events/s for ${RUN_MS} ms)` : ''}`;
  }
  return out;
}
