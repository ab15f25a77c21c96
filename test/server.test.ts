import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from './helpers/server.js';

test('GET / reports version, os, arch and uptime; /ping answers empty 200', async () => {
  const s = await startTestServer();
  try {
    const root = await s.req('GET', '/');
    assert.equal(root.status, 200);
    const info = root.json() as Record<string, unknown>;
    assert.equal(typeof info.version, 'string');
    assert.equal(info.os, process.platform);
    assert.equal(typeof info.upTimeSeconds, 'number');
    const ping = await s.req('GET', '/ping');
    assert.equal(ping.status, 200);
    assert.equal(ping.text, '');
  } finally {
    await s.dispose();
  }
});

test('unknown paths answer eKuiper 404 text, known paths with another method 405', async () => {
  const s = await startTestServer();
  try {
    const nope = await s.req('GET', '/nope');
    assert.equal(nope.status, 404);
    assert.equal(nope.text, '404 page not found\n');
    assert.equal((await s.req('DELETE', '/ping')).status, 405);
  } finally {
    await s.dispose();
  }
});
