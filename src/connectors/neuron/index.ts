/** The neuron family's declarations (declaration.ts): the source and sink on the Neuron gateway's NNG pair. */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration } from '../declaration.js';
import { f, sink, source } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the neuron connectors', () => import('./neuron.js'));

export const neuronDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'neuron',
    load: impl.load,
    create: (host) => new (impl.get().NeuronSource)(host.neuron),
    defaults: 'sources/neuron.yaml',
    meta: source(
      { en_US: 'Receives data of the Neuron industrial gateway.', zh_CN: '接收 Neuron 工业网关的数据。' },
      'sources/builtin/neuron',
      'Neuron',
      [
        f('url', 'string', 'tcp://127.0.0.1:7081', 'URL', 'NNG address of Neuron: ipc:///path or tcp://host:port.', {
          connection: true,
        }),
      ],
    ),
    check: null,
    validate: null,
    // the pair admits one peer: the connection of each URL stays on the main thread and workers reach it (relay.ts)
    threads: { worker: true },
  },
  {
    kind: 'sink',
    type: 'neuron',
    load: impl.load,
    create: (host) => new (impl.get().NeuronSink)(host.neuron),
    meta: sink(
      { en_US: 'Writes tag values to the Neuron industrial gateway.', zh_CN: '向 Neuron 工业网关写入点位值。' },
      'sinks/builtin/neuron',
      'Neuron',
      [
        f('url', 'string', 'tcp://127.0.0.1:7081', 'URL', 'NNG address of Neuron: ipc:///path or tcp://host:port.', {
          connection: true,
        }),
        f('nodeName', 'string', '', 'Node name', 'Neuron node written; may use templates. Required unless raw.'),
        f('groupName', 'string', '', 'Group name', 'Neuron group written; may use templates. Required unless raw.'),
        f('tags', 'list_string', [], 'Tags', 'Row fields written as tags; every field when empty. May use templates.'),
        f('raw', 'bool', false, 'Raw', 'Send the encoded payload as it is.'),
      ],
    ),
    check: null,
    validate: null,
    // the pair admits one peer: the connection of each URL stays on the main thread and workers reach it (relay.ts)
    threads: { worker: true },
  },
];
