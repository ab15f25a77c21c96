/** The mqtt family's declarations (declaration.ts): the mqtt source and sink, and the shared `mqtt` connection. */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration } from '../declaration.js';
import { COMPRESSIONS, TLS, connection, f, sink, source, type FieldMeta } from '../meta.js';
import { loadMqttClient } from './connection.js';

/** the connectors and MQTT.js, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule(
  'the mqtt connectors',
  async () => (await Promise.all([import('./mqtt.js'), loadMqttClient()]))[0],
);

const MQTT_CONN: FieldMeta[] = [
  f(
    'server',
    'string',
    'tcp://127.0.0.1:1883',
    'Broker address',
    'Broker URL, e.g. tcp://127.0.0.1:1883 or ssl://host:8883.',
    { optional: false, connection: true },
  ),
  f('username', 'string', '', 'User name', 'User name for the broker.', { connection: true }),
  f('password', 'string', '', 'Password', 'Password for the broker.', { connection: true }),
  f('clientid', 'string', '', 'Client id', 'Client id; a random one when empty.', { connection: true }),
  f('protocolVersion', 'string', '3.1.1', 'Protocol version', 'MQTT protocol version.', {
    values: ['3.1', '3.1.1'],
    connection: true,
  }),
  ...TLS,
];

export const mqttDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'mqtt',
    create: (host) => new (impl.get().MqttSource)(host.mqtt, host.confKeys),
    load: impl.load,
    defaults: 'mqtt_source.yaml',
    meta: source(
      { en_US: 'Subscribes to topics of an MQTT broker.', zh_CN: '订阅 MQTT 服务器的主题。' },
      'sources/builtin/mqtt',
      'MQTT',
      [
        ...MQTT_CONN,
        f('qos', 'int', 1, 'QoS', 'Subscription quality of service.', { values: [0, 1, 2] }),
        f('decompression', 'string', '', 'Decompression', 'Decompress payloads with this algorithm.', {
          values: COMPRESSIONS,
        }),
        f(
          'connectionSelector',
          'string',
          '',
          'Connection',
          'Shared connection mqtt.<key> from the connections config.',
        ),
      ],
      ['topic/temperature', 'Topic', 'Topic filter; + and # are allowed.'],
    ),
    check: (props, host) => impl.get().checkMqtt(props, host.confKeys),
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'sink',
    type: 'mqtt',
    create: (host) => new (impl.get().MqttSink)(host.mqtt, host.confKeys),
    load: impl.load,
    meta: sink(
      { en_US: 'Publishes results to an MQTT broker.', zh_CN: '将结果发布到 MQTT 服务器。' },
      'sinks/builtin/mqtt',
      'MQTT',
      [
        ...MQTT_CONN,
        f('topic', 'string', '', 'Topic', 'Topic to publish to; may use templates.', { optional: false }),
        f('qos', 'int', 0, 'QoS', 'Publish quality of service.', { values: [0, 1, 2] }),
        f('retained', 'bool', false, 'Retained', 'Publish retained messages.'),
        f('compression', 'string', '', 'Compression', 'Compress payloads.', { values: COMPRESSIONS }),
        f(
          'connectionSelector',
          'string',
          '',
          'Connection',
          'Shared connection mqtt.<key> from the connections config.',
        ),
      ],
    ),
    // the sink check configures the sink first, so its own properties are checked too
    check: async (props, host) => {
      impl.get().checkSinkProps(props);
      await impl.get().checkMqtt(props, host.confKeys);
    },
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'connection',
    type: 'mqtt',
    meta: connection(
      { en_US: 'A broker connection shared by MQTT sources and sinks.', zh_CN: '共享的 MQTT 连接。' },
      'sources/builtin/mqtt',
      'MQTT',
      MQTT_CONN,
    ),
    validate: null,
  },
];
