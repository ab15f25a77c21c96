/**
 * The redis family's declarations (declaration.ts): the redisSub source, the redis lookup table, and the redis and
 * redisPub sinks.
 */
import { lazyModule } from '../../core/lazy.js';
import { LOOKUP_THREADS, provisionCheck, type Declaration } from '../declaration.js';
import { COMPRESSIONS, f, sink, source, type FieldMeta } from '../meta.js';

/** the connectors, imported when a rule or check first needs them (declaration.ts `load`) */
const impl = lazyModule('the redis connectors', async () => {
  const [commonModule, lookupModule, pubSink, sinkModule, subSource] = await Promise.all([
    import('./common.js'),
    import('./lookup.js'),
    import('./pub-sink.js'),
    import('./sink.js'),
    import('./sub-source.js'),
  ]);
  return { ...commonModule, ...lookupModule, ...pubSink, ...sinkModule, ...subSource };
});

/** The connection fields of the redis connectors: the address key differs, and the lookup takes db from DATASOURCE. */
function redisConn(addrKey: 'addr' | 'address', withDb: boolean): FieldMeta[] {
  const fields = [
    f(addrKey, 'string', '127.0.0.1:6379', 'Address', 'host:port of the server.', {
      optional: false,
      connection: true,
    }),
    f('username', 'string', '', 'User name', 'User name.', { connection: true }),
    f('password', 'string', '', 'Password', 'Password.', { connection: true }),
  ];
  if (withDb) fields.push(f('db', 'int', 0, 'Database', 'Database number 0-15.', { connection: true }));
  return fields;
}

export const redisDeclarations: Declaration[] = [
  {
    kind: 'source',
    type: 'redisSub',
    load: impl.load,
    create: () => new (impl.get().RedisSubSource)(),
    defaults: 'sources/redisSub.yaml',
    meta: source(
      { en_US: 'Subscribes to Redis channels.', zh_CN: '订阅 Redis 频道。' },
      'sources/builtin/redisSub',
      'Redis subscription',
      [
        ...redisConn('address', true),
        f('channels', 'list_string', [], 'Channels', 'Channel patterns to subscribe to.', { optional: false }),
        f('decompression', 'string', '', 'Decompression', 'Decompress payloads.', { values: COMPRESSIONS }),
      ],
    ),
    check: async (props) => impl.get().pingRedis(impl.get().subSettings(props).settings),
    validate: null,
    threads: { worker: true },
  },
  {
    kind: 'lookup',
    type: 'redis',
    load: impl.load,
    create: () => new (impl.get().RedisLookup)(),
    defaults: 'sources/redis.yaml',
    meta: source(
      { en_US: 'Looks rows up in Redis by key.', zh_CN: '按键查询 Redis 数据。' },
      'sources/builtin/redis',
      'Redis',
      [
        ...redisConn('addr', false),
        f('dataType', 'string', 'string', 'Data type', 'string: a JSON object per key; list: a list of JSON objects.', {
          values: ['string', 'list'],
        }),
      ],
      ['0', 'Database', 'Database number 0-15.'],
    ),
    check: async (props) => {
      const ds = typeof props.DATASOURCE === 'string' ? props.DATASOURCE : '0';
      await impl.get().pingRedis(impl.get().lookupSettings(ds, props).settings);
    },
    threads: LOOKUP_THREADS,
  },
  {
    kind: 'sink',
    type: 'redis',
    load: impl.load,
    create: () => new (impl.get().RedisSink)(),
    meta: sink(
      { en_US: 'Writes rows to Redis keys or lists.', zh_CN: '将数据写入 Redis。' },
      'sinks/builtin/redis',
      'Redis',
      [
        ...redisConn('addr', true),
        f('key', 'string', '', 'Key', 'Key written.'),
        f('field', 'string', '', 'Key field', 'Take the key from this field of the row.'),
        f('keyType', 'string', 'single', 'Key type', 'single: the row under one key; multiple: one key per field.', {
          values: ['single', 'multiple'],
        }),
        f('dataType', 'string', 'string', 'Data type', 'SET a string or LPUSH onto a list.', {
          values: ['string', 'list'],
        }),
        f('expiration', 'int', -1, 'Expiration', 'Seconds before a string key expires; -1 never.'),
        f('rowkindField', 'string', '', 'Row kind field', 'Field holding the row kind; delete removes.'),
      ],
    ),
    check: async (props) => impl.get().pingRedis(impl.get().sinkSettings(props)),
    // a config key may leave the key to the actions that use it
    validate: provisionCheck(
      () => new (impl.get().RedisSink)(),
      (props) => (props.key === undefined && props.field === undefined ? { ...props, key: 'key' } : props),
    ),
    threads: { worker: true },
  },
  {
    kind: 'sink',
    type: 'redisPub',
    load: impl.load,
    create: () => new (impl.get().RedisPubSink)(),
    meta: sink(
      { en_US: 'Publishes results to a Redis channel.', zh_CN: '将结果发布到 Redis 频道。' },
      'sinks/builtin/redisPub',
      'Redis publish',
      [
        ...redisConn('address', true),
        f('channel', 'string', '', 'Channel', 'Channel to publish to.', { optional: false }),
        f('compression', 'string', '', 'Compression', 'Compress payloads.', { values: COMPRESSIONS }),
      ],
    ),
    check: async (props) => impl.get().pingRedis(impl.get().pubSettings(props)),
    validate: provisionCheck(() => new (impl.get().RedisPubSink)()),
    threads: { worker: true },
  },
];
