import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { connectAsync } from 'mqtt';
import { connectorsService, ctx, freePort, sinkNode, tempDir, waitFor } from '../e2-helpers.js';

/** A second Mosquitto with one TLS listener on a free loopback port and a self-signed certificate. */
async function tlsBroker(dir: string): Promise<{ port: number; cert: Buffer; stop: () => Promise<void> }> {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(dir, 'k.pem'),
      '-out',
      join(dir, 'c.pem'),
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [
      `listener ${port} 127.0.0.1`,
      `certfile ${join(dir, 'c.pem')}`,
      `keyfile ${join(dir, 'k.pem')}`,
      'allow_anonymous true',
      'persistence false',
      // run as ourselves, so the broker can read the key in our private temp folder even when started as root
      `user ${userInfo().username}`,
      '',
    ].join('\n'),
  );
  const proc: ChildProcess = spawn('mosquitto', ['-c', conf], { stdio: 'ignore' });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  await waitFor(() => proc.exitCode === null, 'mosquitto running');
  // wait until the listener accepts connections
  const deadline = Date.now() + 20_000;
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        r(true);
      });
      s.once('error', () => r(false));
    });
    if (ok) break;
    if (Date.now() > deadline || proc.exitCode !== null) throw new Error('TLS broker did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    cert: readFileSync(join(dir, 'c.pem')),
    stop: async () => {
      proc.kill('SIGTERM');
      await exited;
    },
  };
}

test('mqtt over TLS: a root CA given raw, insecureSkipVerify, and verification on by default', async () => {
  const t = tempDir();
  const broker = await tlsBroker(t.dir);
  const server = `ssl://127.0.0.1:${broker.port}`;
  const { conns, close } = await connectorsService();
  const sub = await connectAsync(`mqtts://127.0.0.1:${broker.port}`, { ca: broker.cert, reconnectPeriod: 0 });
  const got: string[] = [];
  sub.on('message', (_t, p) => got.push(p.toString()));
  await sub.subscribeAsync('tls/#', { qos: 1 });
  try {
    // a sink trusting the broker's certificate through rootCARaw
    const sink = sinkNode(conns, 'mqtt', {
      server,
      topic: 'tls/out',
      rootCARaw: broker.cert.toString('base64'),
      tlsMinVersion: 'tls1.2',
    });
    await sink.open();
    sink.push([{ a: 1n }]);
    await waitFor(() => got.length === 1, 'message published over TLS');
    assert.equal(got[0], '[{"a":1}]');
    await sink.close();

    // a source that skips verification receives
    const src = conns.registry.source('mqtt')!();
    src.provision(ctx(), 'tls/in', { server, insecureSkipVerify: true });
    const events: string[] = [];
    await src.connect(
      ctx(),
      (ev) => events.push(Buffer.from(ev.payload as Uint8Array).toString()),
      () => undefined,
    );
    await sub.publishAsync('tls/in', '{"b":2}', { qos: 1 });
    await waitFor(() => events.length === 1, 'message received over TLS');
    assert.equal(events[0], '{"b":2}');
    await src.close(ctx());

    // without trust material the self-signed certificate is refused
    const untrusted = sinkNode(conns, 'mqtt', { server, topic: 'tls/out' });
    await assert.rejects(untrusted.open(), /certificate|self.signed/i);
    await untrusted.close();

    // the connection check over TLS
    const check = conns.registry.connectionCheck('sink', 'mqtt')!;
    await check({ server, topic: 'x', insecureSkipVerify: true });
    await assert.rejects(check({ server, topic: 'x' }), /certificate|self.signed|not connect/i);
  } finally {
    await sub.endAsync(true);
    await close();
    await broker.stop();
    t.remove();
  }
});
