import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync, gunzipSync } from 'node:zlib';
import { Redis } from 'ioredis';
import { connectorsService, ctx, sinkNode, waitFor, freePort } from '../e2-helpers.js';
import type { SourceEvent } from '../../../src/contracts/index.js';
import { EddyError } from '../../../src/core/errors.js';

const uid = (): string => 'eddy-e2-' + Math.random().toString(36).slice(2);

async function client(): Promise<Redis> {
  const r = new Redis({ host: '127.0.0.1', port: 6379, lazyConnect: true });
  await r.connect();
  return r;
}

test('redisSub pattern-subscribes to its channels; payloads carry the channel; gzip decompression', async () => {
  const pub = await client();
  const ch = uid();
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('redisSub')!();
  src.provision(ctx(), '', { address: '127.0.0.1:6379', db: 0, channels: [`${ch}/*`] });
  const gz = conns.registry.source('redisSub')!();
  gz.provision(ctx(), '', { address: '127.0.0.1:6379', channels: [`${ch}-gz`], decompression: 'gzip' });
  const events: SourceEvent[] = [];
  const gzEvents: SourceEvent[] = [];
  await src.connect(
    ctx(),
    (ev) => events.push(ev),
    (e) => assert.fail(e),
  );
  await gz.connect(
    ctx(),
    (ev) => gzEvents.push(ev),
    (e) => assert.fail(e),
  );
  await pub.publish(`${ch}/a`, '{"t":1}');
  await pub.publish(`${ch}/b`, '{"t":2}');
  await pub.publish(`${ch}-other`, '{"t":3}');
  await pub.publish(`${ch}-gz`, gzipSync('{"z":1}'));
  await waitFor(() => events.length === 2 && gzEvents.length === 1, 'messages');
  assert.deepEqual(
    events.map((e) => [Buffer.from(e.payload as Uint8Array).toString(), e.meta.channel]),
    [
      ['{"t":1}', `${ch}/a`],
      ['{"t":2}', `${ch}/b`],
    ],
  );
  assert.equal(Buffer.from(gzEvents[0].payload as Uint8Array).toString(), '{"z":1}');
  await src.close(ctx());
  await gz.close(ctx());
  pub.disconnect();
  await close();
});

test('redisPub publishes the encoded payload to its channel, compressed when asked', async () => {
  const sub = await client();
  const ch = uid();
  const got: Array<[string, Buffer]> = [];
  sub.on('messageBuffer', (c: Buffer, m: Buffer) => got.push([c.toString(), m]));
  await sub.subscribe(ch, ch + '-gz');
  const { conns, close } = await connectorsService();
  const plain = sinkNode(conns, 'redisPub', { address: '127.0.0.1:6379', channel: ch, sendSingle: true });
  const gz = sinkNode(conns, 'redisPub', { address: '127.0.0.1:6379', channel: ch + '-gz', compression: 'gzip' });
  await plain.open();
  await gz.open();
  plain.push([{ a: 1 }, { a: 2 }]);
  gz.push([{ a: 3 }]);
  await waitFor(() => got.length === 3, 'three messages');
  const byChannel = (c: string) => got.filter(([x]) => x === c).map(([, m]) => m);
  assert.deepEqual(byChannel(ch).map(String), ['{"a":1}', '{"a":2}']);
  assert.equal(gunzipSync(byChannel(ch + '-gz')[0]).toString(), '[{"a":3}]');
  await plain.close();
  await gz.close();
  sub.disconnect();
  await close();
});

test('redisSub/redisPub validate properties and check connections', async () => {
  const { conns, close } = await connectorsService();
  assert.throws(
    () => conns.registry.source('redisSub')!().provision(ctx(), '', { address: '127.0.0.1:6379' }),
    (e: unknown) => e instanceof EddyError && /channels/.test(e.message),
  );
  assert.throws(
    () =>
      conns.registry.source('redisSub')!().provision(ctx(), '', { address: '127.0.0.1:6379', channels: ['x'], db: 16 }),
    /0-15/,
  );
  assert.throws(
    () =>
      conns.registry.source('redisSub')!().provision(ctx(), '', {
        address: 'h:1',
        channels: ['x'],
        decompression: 'lz4',
      }),
    /unsupported compressor: lz4/,
  );
  assert.throws(() => sinkNode(conns, 'redisPub', { address: '127.0.0.1:6379' }), /channel is required/);
  await conns.registry.connectionCheck('source', 'redisSub')!({ address: '127.0.0.1:6379' });
  await conns.registry.connectionCheck('sink', 'redisPub')!({ address: '127.0.0.1:6379' });
  await assert.rejects(
    conns.registry.connectionCheck('sink', 'redisPub')!({ address: `127.0.0.1:${await freePort()}` }),
    /ECONNREFUSED/,
  );
  await close();
});

test('redisPub resendDestination: resent items are published to that channel, live ones to the channel', async () => {
  const sub = await client();
  const ch = uid();
  const got: Array<[string, string]> = [];
  sub.on('message', (c: string, m: string) => got.push([c, m]));
  await sub.subscribe(ch, ch + '-again');
  const { conns, close } = await connectorsService();
  const sink = conns.registry.sink('redisPub')!();
  const c = ctx();
  sink.provision(c, { address: '127.0.0.1:6379', channel: ch, resendDestination: ch + '-again' });
  await sink.connect(c);
  const bytes = new TextEncoder().encode('{"a":1}');
  await sink.collect(c, { data: { a: 1 }, rows: [{ a: 1 }], bytes, resend: false });
  await sink.collect(c, { data: { a: 1 }, rows: [{ a: 1 }], bytes, resend: true });
  await waitFor(() => got.length === 2, 'two messages');
  assert.deepEqual(got, [
    [ch, '{"a":1}'],
    [ch + '-again', '{"a":1}'],
  ]);
  await sink.close(c);
  sub.disconnect();
  await close();
});
