/**
 * Persistent sessions of qos ≥ 1 rules (docs/runtime.md §1.9): the broker keeps what is published while the rule is
 * stopped, the rule processes it at its next start, and deleting the rule makes the broker forget the session.
 * A Mosquitto of the test's own keeps the sessions.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import mqtt from 'mqtt';
import { startTestServer } from '../../helpers/server.js';
import { startBroker } from '../../helpers/mosquitto.js';
import { startTcpProxy } from '../../helpers/tcpproxy.js';
import { Collector, Publisher } from '../../helpers/faults.js';
import { waitFor } from '../../helpers/process.js';

test('qos 1 rule: messages published while it is stopped are processed at its next start; deleting it ends the session', async () => {
  const broker = await startBroker();
  const s = await startTestServer({
    env: { MQTT_SOURCE__DEFAULT__SERVER: broker.url, MQTT_SOURCE__DEFAULT__QOS: '1' },
  });
  const collector = await Collector.start(broker.url, 'session/out');
  const publisher = await Publisher.start(broker.url);
  try {
    let r = await s.req('POST', '/streams', {
      sql: 'CREATE STREAM sess () WITH (DATASOURCE="session/in", FORMAT="json")',
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: 'sessrule',
      sql: 'SELECT * FROM sess',
      actions: [{ mqtt: { server: broker.url, topic: 'session/out', qos: 1, sendSingle: true } }],
      options: { qos: 1, checkpointInterval: 1000 },
    });
    assert.equal(r.status, 201, r.text);
    await waitFor(
      () => {
        if (collector.probes > 0) return true;
        publisher.probe('session/in');
        return false;
      },
      30_000,
      'a probe through the rule',
      200,
    );
    const sessions = await s.app.store.entries('mqttsession:sessrule');
    assert.equal(sessions.length, 1, 'the rule remembers its session');
    const clientId = sessions[0][0];

    r = await s.req('POST', '/rules/sessrule/stop');
    assert.equal(r.status, 200, r.text);
    await publisher.run('session/in', 50, 1000);
    assert.equal(collector.distinct, 0, 'nothing is processed while the rule is stopped');
    r = await s.req('POST', '/rules/sessrule/start');
    assert.equal(r.status, 200, r.text);
    await waitFor(() => collector.distinct === 50, 30_000, 'the kept messages after the start');

    r = await s.req('DELETE', '/rules/sessrule');
    assert.equal(r.status, 200, r.text);
    await waitFor(
      async () => (await s.app.store.entries('mqttsession:sessrule')).length === 0,
      30_000,
      'the session to be forgotten',
    );
    // a client taking the same id finds no session left on the broker
    const probe = mqtt.connect(broker.url, { clientId, clean: false, reconnectPeriod: 0 });
    const present = await new Promise<boolean>((resolve, reject) => {
      probe.once('connect', (ack) => resolve(ack.sessionPresent));
      probe.once('error', reject);
    });
    await new Promise<void>((resolve) => probe.end(true, {}, () => resolve()));
    assert.equal(present, false);
  } finally {
    await publisher.close();
    await collector.close();
    await s.dispose();
    await broker.stop();
  }
});

test('stopping a qos 1 rule whose sink broker is away does not wait for the broker; the held messages come again', async () => {
  const broker = await startBroker();
  const proxy = await startTcpProxy(broker.port);
  const s = await startTestServer({
    env: { MQTT_SOURCE__DEFAULT__SERVER: broker.url, MQTT_SOURCE__DEFAULT__QOS: '1' },
  });
  const collector = await Collector.start(broker.url, 'away/out');
  const publisher = await Publisher.start(broker.url);
  try {
    let r = await s.req('POST', '/streams', {
      sql: 'CREATE STREAM away () WITH (DATASOURCE="away/in", FORMAT="json")',
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', {
      id: 'awayrule',
      sql: 'SELECT * FROM away',
      actions: [{ mqtt: { server: `tcp://127.0.0.1:${proxy.port}`, topic: 'away/out', qos: 1, sendSingle: true } }],
      options: { qos: 1, checkpointInterval: 1000 },
    });
    assert.equal(r.status, 201, r.text);
    await waitFor(
      () => {
        if (collector.probes > 0) return true;
        publisher.probe('away/in');
        return false;
      },
      30_000,
      'a probe through the rule',
      200,
    );
    proxy.cut();
    await publisher.run('away/in', 20, 1000);
    r = await s.req('POST', '/rules/awayrule/stop');
    assert.equal(r.status, 200, r.text);
    await waitFor(
      async () => ((await s.req('GET', '/rules/awayrule/status')).json() as { status?: string }).status === 'stopped',
      30_000,
      'the rule to stop',
    );
    assert.equal(collector.distinct, 0);
    // the broker kept what the stopped rule had not acknowledged: it is delivered once the rule and its sink are back
    proxy.restore();
    r = await s.req('POST', '/rules/awayrule/start');
    assert.equal(r.status, 200, r.text);
    await waitFor(() => collector.distinct === 20, 30_000, 'the held messages after the start');
  } finally {
    await publisher.close();
    await collector.close();
    await s.dispose();
    await proxy.close();
    await broker.stop();
  }
});
