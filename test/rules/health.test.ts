/**
 * The rule state beside the status text (src/rules/health.ts, docs/runtime.md §1.5): `degraded` while a source has
 * not connected or a sink fails every send, seen through a real server process whose rules run on worker threads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NodeMetrics } from '../../src/contracts/index.js';
import { ruleHealth, SINK_FAILING_MS, statusGauge, type RunFacts } from '../../src/rules/health.js';
import { startEddyProcess, type EddyProcess } from '../helpers/eddy-process.js';
import { freePort, waitFor } from '../helpers/process.js';
import { startTcpProxy } from '../helpers/tcpproxy.js';

type J = Record<string, unknown>;

const running: RunFacts = { phase: 'running', activity: undefined, stopText: '', lastError: '', lastErrorTime: 0 };

function node(name: string, connection: NodeMetrics['connection']): NodeMetrics {
  const n = new NodeMetrics(name);
  n.setConnection(connection);
  return n;
}

test('the state follows the run and its connections; the status text is not its business', () => {
  const src = node('source_s', 'connected');
  const op = new NodeMetrics('op_2_project');
  const sink = node('sink_mqtt_0', 'connected');
  assert.equal(ruleHealth(running, [src, op, sink]).state, 'running');
  assert.equal(ruleHealth({ ...running, activity: 'starting' }, [node('source_s', 'connecting')]).state, 'starting');
  // a source still connecting after the open, or disconnected, makes the rule degraded with the node's reason
  assert.equal(ruleHealth(running, [node('source_s', 'connecting')]).state, 'degraded');
  const down = ruleHealth(running, [node('source_s', 'disconnected: connect ECONNREFUSED'), sink]);
  assert.deepEqual([down.state, down.reason], ['degraded', 'source_s: disconnected: connect ECONNREFUSED']);
  // a sink failing every send: degraded once the spell is long enough
  const failing = node('sink_rest_0', 'connected');
  const now = Date.now();
  failing.sendFailed(new Error('503 unavailable'));
  assert.equal(ruleHealth(running, [src, failing], now).state, 'running');
  const later = ruleHealth(running, [src, failing], failing.failingSince + SINK_FAILING_MS);
  assert.equal(later.state, 'degraded');
  assert.match(later.reason, /^sink_rest_0: disconnected: every send failed for \d+ s: 503 unavailable$/);
  assert.deepEqual([later.lastError, later.lastErrorTime], ['503 unavailable', failing.lastExceptionTime]);
  // stops: manual, finished, by an error; waiting for a restart after an error is degraded
  const stopped = (stopText: string) => ruleHealth({ ...running, phase: 'stopped', stopText }, []).state;
  assert.equal(stopped('canceled manually.'), 'stopped');
  assert.equal(stopped('finished, its source ended and every record was delivered.'), 'stopped');
  assert.equal(stopped('found error when connecting for tcp://x:1883: refused.'), 'stoppedByError');
  assert.equal(ruleHealth({ ...running, activity: 'stopping' }, [src]).state, 'stopping');
  assert.equal(ruleHealth({ ...running, phase: 'waiting' }, []).state, 'stopped');
  const stuck = ruleHealth({ ...running, stuck: 'worker 1 is not answering its heartbeat' }, [src]);
  assert.deepEqual([stuck.state, stuck.reason], ['degraded', 'worker 1 is not answering its heartbeat']);
  const restarting = ruleHealth({ ...running, activity: 'restarting', lastError: 'boom', lastErrorTime: 1 }, []);
  assert.deepEqual([restarting.state, restarting.reason], ['degraded', 'restarting after an error: boom']);
  assert.deepEqual(
    (['running', 'starting', 'degraded', 'stopping', 'stopped', 'stoppedByError'] as const).map(statusGauge),
    [1, 1, 2, 0, 0, -1],
  );
});

async function withServer(fn: (eddy: EddyProcess) => Promise<void>): Promise<void> {
  const home = mkdtempSync(join(tmpdir(), 'eddy-health-'));
  // /metrics on the REST port (prometheusPort 0)
  const eddy = await startEddyProcess(home, { KUIPER__BASIC__PROMETHEUS: 'true', KUIPER__BASIC__PROMETHEUSPORT: '0' });
  try {
    await fn(eddy);
  } finally {
    await eddy.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

const status = async (eddy: EddyProcess, id: string) => (await eddy.req('GET', `/rules/${id}/status`)).json() as J;

async function mqttRule(eddy: EddyProcess, id: string, server: string, actions: unknown[] = [{ nop: {} }]) {
  const key = `k_${id}`;
  assert.equal((await eddy.req('PUT', `/metadata/sources/mqtt/confKeys/${key}`, { server })).status, 200);
  const create = await eddy.req('POST', '/streams', {
    sql: `CREATE STREAM s_${id} () WITH (DATASOURCE="eddy/health/${id}", CONF_KEY="${key}", FORMAT="json")`,
  });
  assert.equal(create.status, 201, create.text);
  const r = await eddy.req('POST', '/rules', { id, sql: `SELECT * FROM s_${id}`, actions });
  assert.equal(r.status, 201, r.text);
}

test('a source pointed at a closed port: degraded with the reason, everywhere the rule is listed', async (t) => {
  await withServer(async (eddy) => {
    const closed = await freePort();
    const created = Date.now();
    await mqttRule(eddy, 'down', `tcp://127.0.0.1:${closed}`);
    let st: J = {};
    // about 0.1 s on an idle machine (the refusal is immediate; the first rule also starts the worker threads); the
    // deadline only bounds a failure on a loaded one
    await waitFor(
      async () => {
        st = await status(eddy, 'down');
        return st.state === 'degraded' && String(st.source_s_down_0_connection).startsWith('disconnected');
      },
      30_000,
      'the rule degraded',
    );
    t.diagnostic(`degraded with its reason ${Date.now() - created} ms after POST /rules`);
    // 1.14 clients still read a running rule; the state says it does not work, and why
    assert.equal(st.status, 'running');
    assert.equal(typeof st.worker, 'number', 'the rule runs on a worker thread');
    assert.match(String(st.source_s_down_0_connection), /^disconnected: .*ECONNREFUSED/);
    assert.match(String(st.stateReason), /^source_s_down: disconnected: .*ECONNREFUSED/);
    assert.equal(st.sink_nop_0_0_connection, 'connected');
    const list = (await eddy.req('GET', '/rules')).json() as J[];
    assert.deepEqual(
      list.filter((r) => r.id === 'down').map((r) => [r.status, r.state]),
      [['Running', 'degraded']],
    );
    const metrics = (await eddy.req('GET', '/metrics')).text;
    assert.match(metrics, /kuiper_rule_status\{ruleID="down"\} 2/);
    assert.match(metrics, /kuiper_rule_count\{status="degraded"\} 1/);
    // a manual stop is a stop, not an error
    assert.equal((await eddy.req('POST', '/rules/down/stop')).status, 200);
    const stopped = await status(eddy, 'down');
    assert.deepEqual([stopped.status, stopped.state], ['stopped', 'stopped']);
  });
});

test('a link to the broker cut and restored: running → degraded → running', async () => {
  const proxy = await startTcpProxy(1883);
  try {
    await withServer(async (eddy) => {
      await mqttRule(eddy, 'cut', `tcp://127.0.0.1:${proxy.port}`);
      const stateIs = (want: string) => async () => (await status(eddy, 'cut')).state === want;
      await waitFor(stateIs('running'), 30_000, 'the rule running');
      assert.equal((await status(eddy, 'cut')).source_s_cut_0_connection, 'connected');
      proxy.cut();
      await waitFor(stateIs('degraded'), 30_000, 'the rule degraded');
      const st = await status(eddy, 'cut');
      assert.match(String(st.source_s_cut_0_connection), /^disconnected: /);
      assert.ok(Number(st.lastErrorTime) > 0, 'the lost connection is the last error');
      assert.equal(st.status, 'running');
      proxy.restore();
      await waitFor(stateIs('running'), 30_000, 'the rule running again');
      assert.equal((await status(eddy, 'cut')).source_s_cut_0_connection, 'connected');
    });
  } finally {
    await proxy.close();
  }
});

test('a sink failing every send makes its rule degraded until a send succeeds', async () => {
  let failing = true;
  const target = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(failing ? 503 : 200).end(failing ? 'unavailable' : 'ok'));
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const addr = target.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  try {
    await withServer(async (eddy) => {
      const sink = { rest: { url: `http://127.0.0.1:${port}/`, method: 'post', sendSingle: true } };
      await mqttRule(eddy, 'sinkdown', 'tcp://127.0.0.1:1883', [sink]);
      const { connectAsync } = await import('mqtt');
      const client = await connectAsync('mqtt://127.0.0.1:1883');
      const publish = () => client.publishAsync('eddy/health/sinkdown', JSON.stringify({ a: 1 }), { qos: 1 });
      try {
        await waitFor(
          async () => {
            await publish();
            const st = await status(eddy, 'sinkdown');
            // degraded by the sink (a slow start may first show the source still connecting)
            return st.state === 'degraded' && String(st.sink_rest_0_0_connection).startsWith('disconnected');
          },
          60_000,
          'the rule degraded by its sink',
          500,
        );
        const st = await status(eddy, 'sinkdown');
        assert.match(String(st.sink_rest_0_0_connection), /^disconnected: /);
        assert.equal(st.source_s_sinkdown_0_connection, 'connected');
        failing = false;
        await waitFor(
          async () => {
            await publish();
            return (await status(eddy, 'sinkdown')).state === 'running';
          },
          60_000,
          'the rule running once a send succeeded',
          500,
        );
      } finally {
        await client.endAsync();
      }
    });
  } finally {
    await new Promise<void>((resolve) => target.close(() => resolve()));
  }
});
