/**
 * A rest sink whose target answers 503 for a while (docs/runtime.md §3.5): with `enableCache`, every row is kept and
 * resent in order once the target accepts again; without a cache at rule qos 1, the failed send is retried and the
 * checkpoint covering it waits, so the source does not acknowledge it and nothing is lost; at qos 0 without a cache,
 * eKuiper's behaviour: the refused rows are given up. Eddy runs as a child process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBroker } from '../helpers/mosquitto.js';
import { startEddyProcess } from '../helpers/eddy-process.js';
import { Publisher } from '../helpers/faults.js';
import { waitFor } from '../helpers/process.js';

interface Outage {
  count: number;
  rate: number;
  outageMs: number;
  cache: boolean;
  ruleQos: number;
}

interface OutageResult {
  /** numbers the target accepted, in arrival order */
  accepted: number[];
  distinct: number;
  refused: number;
}

/** Numbered rows through an MQTT → rest rule; the target answers 503 for `outageMs` once a third has arrived. */
async function runRestOutage(o: Outage): Promise<OutageResult> {
  const accepted: number[] = [];
  let refused = 0;
  let probes = 0;
  let failing = false;
  const http = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (failing) {
        refused++;
        res.writeHead(503).end('unavailable');
        return;
      }
      const row = JSON.parse(body) as { n?: number | null };
      if (typeof row.n === 'number') accepted.push(row.n);
      else probes++;
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const addr = http.address();
  const httpPort = typeof addr === 'object' && addr ? addr.port : 0;
  const broker = await startBroker();
  const home = mkdtempSync(join(tmpdir(), 'eddy-faults-'));
  const eddy = await startEddyProcess(home, {
    MQTT_SOURCE__DEFAULT__SERVER: broker.url,
    MQTT_SOURCE__DEFAULT__QOS: '1',
  });
  const publisher = await Publisher.start(broker.url);
  try {
    let r = await eddy.req('POST', '/streams', {
      sql: 'CREATE STREAM restin () WITH (DATASOURCE="faults/rest/in", FORMAT="json")',
    });
    assert.equal(r.status, 201, r.text);
    r = await eddy.req('POST', '/rules', {
      id: 'restout',
      sql: 'SELECT n FROM restin WHERE temperature > 50',
      actions: [
        {
          rest: {
            url: `http://127.0.0.1:${httpPort}/in`,
            method: 'post',
            sendSingle: true,
            ...(o.cache ? { enableCache: true, resendInterval: 0 } : {}),
          },
        },
      ],
      options: { qos: o.ruleQos },
    });
    assert.equal(r.status, 201, r.text);
    // the rule reports running before it subscribed: numbered rows start once a probe went through
    await waitFor(
      () => {
        if (probes > 0) return true;
        publisher.probe('faults/rest/in');
        return false;
      },
      60_000,
      'the rule to subscribe',
      200,
    );
    const publishing = publisher.run('faults/rest/in', o.count, o.rate);
    await waitFor(() => accepted.length >= o.count / 3, 60_000, 'a third of the rows');
    failing = true;
    await sleep(o.outageMs);
    failing = false;
    await publishing;
    // everything, or no progress for 10 s
    let last = -1;
    let since = Date.now();
    await waitFor(
      () => {
        if (new Set(accepted).size >= o.count) return true;
        if (accepted.length !== last) {
          last = accepted.length;
          since = Date.now();
        }
        return Date.now() - since > 10_000;
      },
      120_000,
      'the rows to settle',
      100,
    );
    return { accepted, distinct: new Set(accepted).size, refused };
  } finally {
    await publisher.close();
    await eddy.stop();
    await broker.stop();
    await new Promise((resolve) => http.close(resolve));
    rmSync(home, { recursive: true, force: true });
  }
}

test('rest sink target answering 503 for a while, with the cache: every row arrives, in order', async (t) => {
  const count = 2000;
  const r = await runRestOutage({ count, rate: 1000, outageMs: 2000, cache: true, ruleQos: 0 });
  t.diagnostic(
    `sent ${count}, delivered ${r.distinct}, answered 503: ${r.refused}, duplicates ${r.accepted.length - r.distinct}`,
  );
  assert.ok(r.refused > 0, 'the target refused rows for a while');
  assert.equal(r.distinct, count);
  for (let i = 1; i < r.accepted.length; i++)
    assert.ok(r.accepted[i] > r.accepted[i - 1], `in order at ${i}: ${r.accepted[i - 1]} then ${r.accepted[i]}`);
});

test('rest sink target answering 503 for a while, no cache, rule qos 1: refused sends are retried, nothing lost', async (t) => {
  const count = 3000;
  const r = await runRestOutage({ count, rate: 1000, outageMs: 3000, cache: false, ruleQos: 1 });
  t.diagnostic(
    `sent ${count}, delivered ${r.distinct}, lost ${count - r.distinct}, answered 503: ${r.refused}, duplicates ${r.accepted.length - r.distinct}`,
  );
  assert.ok(r.refused > 0, 'the target refused rows for a while');
  assert.equal(r.distinct, count);
});

test('rest sink target answering 503 for a while, no cache, rule qos 0: refused rows are given up (eKuiper)', async (t) => {
  const count = 1500;
  const r = await runRestOutage({ count, rate: 1000, outageMs: 1500, cache: false, ruleQos: 0 });
  t.diagnostic(`sent ${count}, delivered ${r.distinct}, lost ${count - r.distinct}, answered 503: ${r.refused}`);
  assert.ok(r.refused > 0, 'the target refused rows for a while');
  assert.equal(r.distinct, count - r.refused);
});
