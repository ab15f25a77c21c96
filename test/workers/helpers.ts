/** What the rule-worker tests share: status reads, feeding a rule over MQTT, driving a rule until it is stopped. */
import assert from 'node:assert/strict';
import type { TestServer } from '../helpers/server.js';
import { publisher } from '../connectors/helpers.js';

export type J = Record<string, unknown>;

export async function status(s: TestServer, id: string): Promise<J> {
  const r = await s.req('GET', `/rules/${id}/status`);
  assert.equal(r.status, 200, r.text);
  return r.json() as J;
}

/** Publishes `{n, temperature}` rows to `${topic}/in` until `count` outputs arrived (a subscription may lag its start). */
export async function feed(topic: string, got: () => number, count: number, from = 0): Promise<void> {
  const pub = await publisher();
  try {
    let n = from;
    const end = Date.now() + 30_000;
    while (got() < count) {
      if (Date.now() > end) assert.fail(`only ${got()} of ${count} outputs`);
      await pub.publishAsync(`${topic}/in`, JSON.stringify({ n: n++, temperature: 60 }));
      await pub.publishAsync(`${topic}/in`, JSON.stringify({ n: n++, temperature: 10 }));
      await new Promise((r) => setTimeout(r, 30));
    }
  } finally {
    await pub.endAsync();
  }
}

/** Publishes `{s:'x'}` to `${topic}/heavy` until rule `id` is no longer running (at most 60 s); its last status. */
export async function publishUntilStopped(s: TestServer, id: string, topic: string): Promise<J> {
  const pub = await publisher();
  try {
    let st = await status(s, id);
    const end = Date.now() + 60_000;
    while (st.status === 'running' && Date.now() < end) {
      await pub.publishAsync(`${topic}/heavy`, JSON.stringify({ s: 'x' }));
      await new Promise((res) => setTimeout(res, 300));
      st = await status(s, id);
    }
    return st;
  } finally {
    await pub.endAsync();
  }
}
