/** The log family's declarations (declaration.ts): the log sink (the rule's logger) and the nop sink. */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration } from '../declaration.js';
import { f, sink } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the log and nop sinks', () => import('./lognop.js'));

export const logDeclarations: Declaration[] = [
  {
    kind: 'sink',
    type: 'log',
    load: impl.load,
    create: () => new (impl.get().LogSink)(),
    meta: sink({ en_US: 'Writes results to the log.', zh_CN: '将结果写入日志。' }, 'sinks/builtin/log', 'Log', []),
    check: null,
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'sink',
    type: 'nop',
    load: impl.load,
    create: () => new (impl.get().NopSink)(),
    meta: sink({ en_US: 'Discards results.', zh_CN: '丢弃结果。' }, 'sinks/builtin/nop', 'Nop', [
      f('log', 'bool', false, 'Log', 'Also log each result.'),
    ]),
    check: null,
    validate: null,
    threads: { worker: true },
  },
];
