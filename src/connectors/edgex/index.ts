/** The edgex family's declarations (declaration.ts): the source and sink on an EdgeX message bus. */
import { lazyModule } from '../../core/lazy.js';
import type { Declaration } from '../declaration.js';
import { f, sink, source } from '../meta.js';
import { loadMqttClient } from '../mqtt/connection.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule(
  'the edgex connectors',
  async () => (await Promise.all([import('./edgex.js'), loadMqttClient()]))[0],
);

const BUS_FIELDS = [
  f('protocol', 'string', 'redis', 'Protocol', 'Protocol of the bus server (redis, tcp, ssl).', { connection: true }),
  f('server', 'string', 'localhost', 'Server', 'Host of the bus server.', { connection: true }),
  f('port', 'int', 6379, 'Port', 'Port of the bus server.', { connection: true }),
  f('type', 'string', 'redis', 'Bus type', 'Message bus transport.', {
    values: ['redis', 'mqtt', 'nats-core'],
    connection: true,
  }),
  f('optional', 'object', {}, 'Options', 'ClientId, Username, Password, Qos, Retained, … as strings.', {
    connection: true,
  }),
  f('connectionSelector', 'string', '', 'Connection', 'Shared connection edgex.<key> from the connections config.'),
];

export const edgexDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'edgex',
    load: impl.load,
    create: (host) => new (impl.get().EdgexSource)(host.mqtt, host.confKeys),
    defaults: 'sources/edgex.yaml',
    meta: source(
      { en_US: 'Subscribes to events of the EdgeX message bus.', zh_CN: '订阅 EdgeX 消息总线的事件。' },
      'sources/builtin/edgex',
      'EdgeX',
      [
        ...BUS_FIELDS,
        f('topic', 'string', 'rules-events', 'Topic', 'Bus topic subscribed to; # and + are allowed.', {
          optional: false,
        }),
        f('messageType', 'string', 'event', 'Message type', 'Payload is an Event or an AddEventRequest.', {
          values: ['event', 'request'],
        }),
      ],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'sink',
    type: 'edgex',
    load: impl.load,
    create: (host) => new (impl.get().EdgexSink)(host.mqtt, host.confKeys),
    meta: sink(
      {
        en_US: 'Publishes results as EdgeX events on the message bus.',
        zh_CN: '将结果作为 EdgeX 事件发布到消息总线。',
      },
      'sinks/builtin/edgex',
      'EdgeX',
      [
        ...BUS_FIELDS,
        f('topic', 'string', '', 'Topic', 'Topic published to; application when neither topic nor topicPrefix is set.'),
        f('topicPrefix', 'string', '', 'Topic prefix', 'Publish to <prefix>/<profileName>/<deviceName>/<sourceName>.'),
        f('messageType', 'string', 'event', 'Message type', 'Publish Events or AddEventRequests.', {
          values: ['event', 'request'],
        }),
        f('contentType', 'string', 'application/json', 'Content type', 'Content type of the envelope payload.', {
          values: ['application/json'],
        }),
        f('deviceName', 'string', 'ekuiper', 'Device name', 'Device of the events when the row metadata has none.'),
        f(
          'profileName',
          'string',
          'ekuiperProfile',
          'Profile name',
          'Profile of the events when the row metadata has none.',
        ),
        f('sourceName', 'string', '', 'Source name', 'Source of the events; the rule id when empty.'),
        f(
          'metadata',
          'string',
          '',
          'Metadata field',
          'Row field holding meta(*) of an edgex source: its values override event and reading metadata.',
        ),
      ],
    ),
    check: null,
    validate: null,
    threads: { worker: true },
  },
];
