/** The log family's declarations (declaration.ts): the log sink (the rule's logger) and the nop sink. */
import type { Declaration } from '../declaration.js';
import { f, sink } from '../meta.js';
import { LogSink, NopSink } from './lognop.js';

export const logDeclarations: Declaration[] = [
  {
    kind: 'sink',
    type: 'log',
    create: () => new LogSink(),
    meta: sink({ en_US: 'Writes results to the log.', zh_CN: '将结果写入日志。' }, 'sinks/builtin/log', 'Log', []),
    check: null,
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'sink',
    type: 'nop',
    create: () => new NopSink(),
    meta: sink({ en_US: 'Discards results.', zh_CN: '丢弃结果。' }, 'sinks/builtin/nop', 'Nop', [
      f('log', 'bool', false, 'Log', 'Also log each result.'),
    ]),
    check: null,
    validate: null,
    threads: { worker: true },
  },
];
