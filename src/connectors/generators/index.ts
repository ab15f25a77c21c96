/**
 * The generators' declarations (declaration.ts): sources that make their rows in-process (simulator, random,
 * nexmark), on whatever thread runs the rule.
 */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration } from '../declaration.js';
import { f, source } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the generator sources', async () => {
  const [nexmark, random, simulator] = await Promise.all([
    import('./nexmark.js'),
    import('./random.js'),
    import('./simulator.js'),
  ]);
  return { ...nexmark, ...random, ...simulator };
});

export const generatorDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'simulator',
    load: impl.load,
    create: () => new (impl.get().SimulatorSource)(),
    defaults: 'sources/simulator.yaml',
    meta: source(
      { en_US: 'Replays a fixed list of rows at an interval, for trials.', zh_CN: '按间隔重放固定数据，用于试运行。' },
      'sources/builtin/simulator',
      'Simulator',
      [
        f('data', 'list_object', [{ temperature: 22.5, humidity: 50 }], 'Data', 'Rows replayed in order.', {
          optional: false,
        }),
        f('interval', 'int', 1000, 'Interval', 'Milliseconds between two rows.'),
        f('loop', 'bool', true, 'Loop', 'Start over after the last row.'),
      ],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'source',
    type: 'random',
    load: impl.load,
    create: () => new (impl.get().RandomSource)(),
    defaults: 'sources/random.yaml',
    meta: source(
      {
        en_US: 'Generates rows of random integers around a pattern, for trials and demos.',
        zh_CN: '按模板生成随机整数数据，用于试用和演示。',
      },
      'sources/plugin/random',
      'Random',
      [
        f('interval', 'int', 1000, 'Interval', 'Milliseconds between two rows.', { optional: false }),
        f('seed', 'int', 1, 'Seed', 'Each field is its pattern value plus a random integer below this.', {
          optional: false,
        }),
        f('pattern', 'object', { count: 50 }, 'Pattern', 'Field names and their integer base values.', {
          optional: false,
        }),
        f(
          'deduplicate',
          'int',
          0,
          'Deduplicate',
          '0 off; N > 0 skip rows equal to one of the last N; < 0 skip any row seen before.',
        ),
      ],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'source',
    type: 'nexmark',
    load: impl.load,
    create: () => new (impl.get().NexmarkSource)(),
    defaults: 'sources/nexmark.yaml',
    meta: source(
      {
        en_US: 'Generates Nexmark auction events (persons, auctions, bids) at a given rate.',
        zh_CN: '按给定速率生成 Nexmark 拍卖事件。',
      },
      'sources/builtin/nexmark',
      'Nexmark',
      [
        f('qps', 'int', 1000, 'Events per second', 'Rate of the event sequence, excluded kinds included.'),
        f('bufferSize', 'int', 1024, 'Buffer size', 'Most events generated in one turn.'),
        f('excludePerson', 'bool', false, 'Exclude persons', 'Do not emit person events.'),
        f('excludeAuction', 'bool', false, 'Exclude auctions', 'Do not emit auction events.'),
        f('excludeBid', 'bool', false, 'Exclude bids', 'Do not emit bid events.'),
      ],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
  },
];
