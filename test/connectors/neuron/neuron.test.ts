import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../../helpers/server.js';
import type { ValueObject } from '../../../src/values/value.js';
import { tempDir } from '../e2-helpers.js';
import { until } from '../helpers.js';

// the independent peer: the NNG C library (Debian's libnng) in a PAIR0 socket listening like Neuron does; it sends
// a Neuron-style data message every 100 ms and prints every message it receives on a line
const PEER = `
#include <stdio.h>
#include <string.h>
#include <nng/nng.h>
#include <nng/protocol/pair0/pair.h>
int main(int argc, char **argv) {
  nng_socket s;
  if (nng_pair0_open(&s) != 0) return 1;
  if (nng_listen(s, argv[1], NULL, 0) != 0) return 2;
  nng_setopt_ms(s, NNG_OPT_RECVTIMEO, 100);
  printf("listening\\n");
  fflush(stdout);
  for (int i = 0;; i++) {
    char out[256];
    snprintf(out, sizeof out, "{\\"timestamp\\":%d,\\"node_name\\":\\"modbus\\",\\"group_name\\":\\"grp\\",\\"values\\":{\\"temp\\":%d.5,\\"count\\":%d},\\"errors\\":{}}", 1700000000 + i, 20 + i % 5, i);
    nng_send(s, out, strlen(out), NNG_FLAG_NONBLOCK);
    char *msg;
    size_t size;
    if (nng_recv(s, &msg, &size, NNG_FLAG_ALLOC) == 0) {
      fwrite(msg, 1, size, stdout);
      printf("\\n");
      fflush(stdout);
      nng_free(msg, size);
    }
  }
}
`;

function startPeer(dir: string, url: string): { proc: ChildProcess; lines: string[] } {
  writeFileSync(join(dir, 'peer.c'), PEER);
  const cc = spawnSync('cc', ['-o', join(dir, 'peer'), join(dir, 'peer.c'), '-lnng'], { encoding: 'utf8' });
  assert.equal(cc.status, 0, cc.stderr);
  const proc = spawn(join(dir, 'peer'), [url], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines: string[] = [];
  let rest = '';
  proc.stdout!.on('data', (d: Buffer) => {
    const all = (rest + d.toString('utf8')).split('\n');
    rest = all.pop() ?? '';
    lines.push(...all);
  });
  return { proc, lines };
}

async function running(s: TestServer, rid: string): Promise<void> {
  let text = '';
  const end = Date.now() + 15_000;
  while (!/"status":\s*"running"/.test(text)) {
    if (Date.now() > end) throw new Error(`rule ${rid} not running: ${text}`);
    text = (await s.req('GET', `/rules/${rid}/status`)).text;
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('neuron source and sink share one NNG pair connection over IPC with a libnng peer: Neuron data in, tag writes out', async () => {
  const t = tempDir('eddy-neuron-');
  const url = `ipc://${join(t.dir, 'neuron.ipc')}`;
  const peer = startPeer(t.dir, url);
  const s = await startTestServer();
  const id = Math.random().toString(36).slice(2, 8);
  const rows: ValueObject[] = [];
  const closeMem = s.app.connectors.memory.subscribe(`neuron/${id}/out`, (m) => rows.push(m.row));
  try {
    await until(() => peer.lines.includes('listening'), 15_000, 'the peer');
    assert.deepEqual(
      ((await s.req('GET', '/metadata/sources/yaml/neuron')).json() as Record<string, unknown>).default,
      { url: 'tcp://127.0.0.1:7081' },
    );
    assert.equal((await s.req('PUT', `/metadata/sources/neuron/confKeys/k${id}`, { url })).status, 200);
    assert.equal(
      (await s.req('POST', '/streams', { sql: `CREATE STREAM nr${id} () WITH (TYPE="neuron", CONF_KEY="k${id}")` }))
        .status,
      201,
    );
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `ns${id}`,
          sql: `SELECT node_name, group_name, values->temp AS temp, values->count AS count, timestamp FROM nr${id}`,
          actions: [{ memory: { topic: `neuron/${id}/out`, sendSingle: true } }],
        })
      ).status,
      201,
    );
    await until(() => rows.length >= 3, 20_000, 'neuron rows');
    assert.equal(rows[0].node_name, 'modbus');
    assert.equal(rows[0].group_name, 'grp');
    assert.equal(typeof rows[0].temp, 'number');
    assert.ok((rows[1].timestamp as number) > (rows[0].timestamp as number));

    // the sink writes tags of each row: node and group names rendered from the row
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM nin${id} () WITH (TYPE="memory", DATASOURCE="neuron/${id}/in")`,
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `nk${id}`,
          sql: `SELECT * FROM nin${id}`,
          actions: [{ neuron: { url, nodeName: '{{.node}}', groupName: 'g1', tags: ['setpoint', 'mode'] } }],
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await s.req('POST', '/rules', {
          id: `nw${id}`,
          sql: `SELECT setpoint FROM nin${id}`,
          actions: [{ neuron: { url, raw: true, sendSingle: true } }],
        })
      ).status,
      201,
    );
    await running(s, `nk${id}`);
    await running(s, `nw${id}`);
    // every rule runs on its worker: the one connection of the URL stays on the main thread, the peer sees one
    for (const rid of [`ns${id}`, `nk${id}`, `nw${id}`]) {
      const st = (await s.req('GET', `/rules/${rid}/status`)).json() as Record<string, unknown>;
      assert.equal(st.worker, s.app.workers?.place(rid), `${rid} runs on its worker: ${JSON.stringify(st)}`);
    }
    const writes = () => peer.lines.filter((l) => l.startsWith('{'));
    const end = Date.now() + 20_000;
    while (writes().length < 3 && Date.now() < end) {
      s.app.connectors.memory.publish({
        topic: `neuron/${id}/in`,
        row: { node: 'plc1', setpoint: 42n, mode: 'auto', other: 1n } as ValueObject,
      });
      await new Promise((r) => setTimeout(r, 300));
    }
    const got = writes().map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      got.find((m) => m.tag_name === 'setpoint'),
      { group_name: 'g1', node_name: 'plc1', tag_name: 'setpoint', value: 42 },
    );
    assert.deepEqual(
      got.find((m) => m.tag_name === 'mode'),
      { group_name: 'g1', node_name: 'plc1', tag_name: 'mode', value: 'auto' },
    );
    assert.ok(!got.some((m) => m.tag_name === 'other'), 'only the listed tags');
    assert.ok(
      got.some((m) => JSON.stringify(m) === '{"setpoint":42}'),
      'raw mode sends the encoded row',
    );

    const bad = await s.req('POST', '/rules', {
      id: `nb${id}`,
      sql: `SELECT * FROM nin${id}`,
      actions: [{ neuron: { url, groupName: 'g' } }],
    });
    assert.equal(bad.status, 400);
    assert.match(bad.text, /node name is required if raw is not set/);
  } finally {
    closeMem();
    await s.dispose();
    peer.proc.kill('SIGKILL');
    t.remove();
  }
});
