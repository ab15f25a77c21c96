import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../helpers/server.js';
import type { ValueObject } from '../../../src/values/value.js';
import { until } from '../helpers.js';

test('simulator source: replays its data through a rule (typed by the schema), loops, or ends the rule', async () => {
  const s = await startTestServer();
  const out: ValueObject[] = [];
  const looped: ValueObject[] = [];
  const close1 = s.app.connectors.memory.subscribe('simtest/out', (m) => out.push(m.row));
  const close2 = s.app.connectors.memory.subscribe('simtest/loop', (m) => looped.push(m.row));
  try {
    // the shipped default config key
    assert.deepEqual((await s.req('GET', '/metadata/sources/yaml/simulator')).json(), {
      default: { data: [{ humidity: 50, temperature: 22.5 }], interval: 1000, loop: true },
    });
    const key = {
      data: [
        { a: 5, b: 'x' },
        { a: 7, b: 'y' },
      ],
      interval: 20,
      loop: false,
    };
    assert.equal((await s.req('PUT', '/metadata/sources/simulator/confKeys/once', key)).status, 200);
    assert.equal(
      (await s.req('PUT', '/metadata/sources/simulator/confKeys/again', { ...key, loop: true })).status,
      200,
    );
    const stream = (name: string, conf: string) =>
      s.req('POST', '/streams', {
        sql: `CREATE STREAM ${name} (a bigint, b string) WITH (TYPE="simulator", CONF_KEY="${conf}")`,
      });
    assert.equal((await stream('simonce', 'once')).status, 201);
    assert.equal((await stream('simloop', 'again')).status, 201);
    const rule = (id: string, from: string, topic: string) =>
      s.req('POST', '/rules', {
        id,
        sql: `SELECT a / 2 AS h, b FROM ${from}`,
        actions: [{ memory: { topic, sendSingle: true } }],
      });
    assert.equal((await rule('simr1', 'simonce', 'simtest/out')).status, 201);
    assert.equal((await rule('simr2', 'simloop', 'simtest/loop')).status, 201);
    await until(() => out.length === 2 && looped.length >= 5, 15_000, 'rows');
    // a bigint column divides as an integer
    assert.deepEqual(out, [
      { h: 2n, b: 'x' },
      { h: 3n, b: 'y' },
    ]);
    assert.deepEqual(
      looped.slice(0, 3).map((r) => r.b),
      ['x', 'y', 'x'],
    );
    const status = async (id: string) =>
      ((await s.req('GET', `/rules/${id}/status`)).json() as { status: string }).status;
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(out.length, 2, 'nothing after the last row without loop');
    assert.equal(await status('simr2'), 'running');

    const bad = await s.req('PUT', '/metadata/sources/simulator/confKeys/bad', { data: [], interval: 0 });
    assert.equal(bad.status, 200);
    assert.equal((await stream('simbad', 'bad')).status, 201);
    await s.req('POST', '/rules', { id: 'simr3', sql: 'SELECT * FROM simbad', actions: [{ log: {} }] });
    let text = '';
    for (const end = Date.now() + 30_000; Date.now() < end && !/non-empty list/.test(text);) {
      text = (await s.req('GET', '/rules/simr3/status')).text;
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(text, /simulator property data must be a non-empty list of objects/);
  } finally {
    close1();
    close2();
    await s.dispose();
  }
});
