/** The influx family's declaration (declaration.ts): the InfluxDB 1.x sink. */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration } from '../declaration.js';
import { TLS, f, sink } from '../meta.js';
import { PRECISIONS } from './line.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the influx sink', () => import('./sink.js'));

export const influxDeclarations: Declaration[] = [
  {
    kind: 'sink',
    type: 'influx',
    load: impl.load,
    create: () => new (impl.get().InfluxSink)(),
    meta: sink(
      { en_US: 'Writes results as points to an InfluxDB 1.x database.', zh_CN: '将结果写入 InfluxDB 1.x。' },
      'sinks/plugin/influx',
      'InfluxDB',
      [
        f('addr', 'string', 'http://127.0.0.1:8086', 'Address', 'URL of the InfluxDB server.', {
          optional: false,
          connection: true,
        }),
        f('username', 'string', '', 'User name', 'User name.', { connection: true }),
        f('password', 'string', '', 'Password', 'Password.', { connection: true }),
        f('database', 'string', '', 'Database', 'Database written.', { optional: false }),
        f('measurement', 'string', '', 'Measurement', 'Measurement of the points.', { optional: false }),
        f('precision', 'string', 'ms', 'Precision', 'Unit of the timestamps.', { values: [...PRECISIONS] }),
        f(
          'tsFieldName',
          'string',
          '',
          'Timestamp field',
          'Field holding the point time in precision units; now when empty.',
        ),
        f('tags', 'object', {}, 'Tags', 'Tag name to value; values may use templates.'),
        ...TLS,
      ],
    ),
    check: async (props) => impl.get().pingInflux(impl.get().influxSettings(props).target),
    validate: null,
    threads: { worker: true },
  },
];
