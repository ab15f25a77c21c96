/** The memory family's declarations (declaration.ts): the source, lookup table and sink on the server's topic bus. */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration, Threads } from '../declaration.js';
import { f, sink, source } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the memory connectors', () => import('./memory.js'));

const META = source(
  { en_US: 'Reads rows published by memory sinks of other rules.', zh_CN: '读取其他规则内存动作发布的数据。' },
  'sources/builtin/memory',
  'Memory',
  [f('bufferLength', 'int', 1024, 'Buffer length', 'Messages kept while the rule is busy.')],
  ['topic1', 'Topic', 'Memory topic; + and # are allowed.'],
);

/** every thread of a server has its bus, and the buses of a server exchange rows (bus.ts) */
const BUS_THREADS: Threads = { worker: true };

export const memoryDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'memory',
    load: impl.load,
    create: (host) => new (impl.get().MemorySource)(host.memory),
    defaults: 'sources/memory.yaml',
    meta: META,
    check: null,
    validate: null,
    threads: BUS_THREADS,
  },
  {
    kind: 'lookup',
    type: 'memory',
    // the tables of one thread are shared by its lookups: one table per topic and key (bus.ts)
    load: impl.load,
    create: (host) => new (impl.get().MemoryLookup)(host.memory),
    defaults: 'sources/memory.yaml',
    meta: META,
    check: null,
    threads: BUS_THREADS,
  },
  {
    kind: 'sink',
    type: 'memory',
    load: impl.load,
    create: (host) => new (impl.get().MemorySink)(host.memory),
    meta: sink(
      { en_US: 'Publishes rows to a memory topic read by other rules.', zh_CN: '将数据发布到内存主题。' },
      'sinks/builtin/memory',
      'Memory',
      [
        f('topic', 'string', '', 'Topic', 'Memory topic; may use templates.', { optional: false }),
        f('rowkindField', 'string', '', 'Row kind field', 'Field holding insert, update, upsert or delete.'),
        f('keyField', 'string', '', 'Key field', 'Key of the rows, required with a row kind field.'),
      ],
    ),
    check: null,
    validate: null,
    threads: BUS_THREADS,
  },
];
