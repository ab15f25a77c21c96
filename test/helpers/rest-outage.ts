/**
 * A rest sink whose target answers 503 for a while, shared by test/faults/rest-outage.test.ts and bench/faults:
 * numbered rows through an MQTT → rest rule in an Eddy child process; the target refuses for `outageMs` once a third
 * of the rows arrived.
 */
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBroker } from './mosquitto.js';
import { startEddyProcess } from './eddy-process.js';
import { Publisher } from './faults.js';
import { waitFor } from './process.js';

export interface Outage {
  count: number;
  rate: number;
  outageMs: number;
  cache: boolean;
  ruleQos: number;
}

export interface OutageResult {
  /** numbers the target accepted, in arrival order */
  accepted: number[];
  distinct: number;
  refused: number;
}

/** Numbered rows through an MQTT → rest rule; the target answers 503 for `outageMs` once a third has arrived. */
export async function runRestOutage(o: Outage): Promise<OutageResult> {
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
    if (r.status !== 201) throw new Error(`${r.status} ${r.text}`);
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
    if (r.status !== 201) throw new Error(`${r.status} ${r.text}`);
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
