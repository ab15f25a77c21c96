import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { connectorsService, ctx, sinkNode, tempDir, waitFor } from '../e2-helpers.js';

/** A self-signed certificate for localhost / 127.0.0.1, made with the system openssl. */
function selfSigned(dir: string): { key: Buffer; cert: Buffer } {
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
  return { key: readFileSync(join(dir, 'k.pem')), cert: readFileSync(join(dir, 'c.pem')) };
}

test('rest sink and httppull over https: verification by default, insecureSkipVerify, a root CA given raw', async () => {
  const t = tempDir();
  const { key, cert } = selfSigned(t.dir);
  const bodies: string[] = [];
  const server = createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      bodies.push(Buffer.concat(chunks).toString());
      res.writeHead(200).end('{"v":1}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const { conns, close } = await connectorsService();

  const verified = sinkNode(conns, 'rest', { url, method: 'post' });
  const insecure = sinkNode(conns, 'rest', { url, method: 'post', insecureSkipVerify: true });
  const withCa = sinkNode(conns, 'rest', { url, method: 'post', rootCARaw: cert.toString('base64') });
  for (const n of [verified, insecure, withCa]) await n.open();
  verified.push([{ n: 1 }]);
  insecure.push([{ n: 2 }]);
  withCa.push([{ n: 3 }]);
  await waitFor(() => verified.metrics.exceptions === 1 && bodies.length === 2, 'one refusal, two posts');
  assert.match(verified.metrics.lastException, /self.signed|certificate/i);
  assert.deepEqual(bodies.sort(), ['[{"n":2}]', '[{"n":3}]']);
  for (const n of [verified, insecure, withCa]) await n.close();

  // httppull ships insecureSkipVerify: true in its default config key
  const src = conns.registry.source('httppull')!();
  src.provision(ctx(), '/data', {
    ...conns.registry.sourceProps('httppull', undefined),
    url,
    method: 'get',
    interval: 60000,
  });
  const got: string[] = [];
  await src.connect(
    ctx(),
    (ev) => got.push(Buffer.from(ev.payload as Uint8Array).toString()),
    (e) => assert.fail(e),
  );
  await waitFor(() => got.length === 1, 'https pull');
  assert.deepEqual(got, ['{"v":1}']);
  await src.close(ctx());

  await close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  t.remove();
});
