/**
 * Graph rules (docs/runtime.md §1.4) are planned and run on the rule workers (docs/runtime.md §1.10): a graph over an
 * MQTT stream delivers from its worker with the node names of the main thread, and a graph the planner refuses is
 * answered with eKuiper’s error as before; a graph whose sink keeps its socket on the main thread (zmq) runs on its worker too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';
import { publisher, subscriber, uniqueTopic } from '../connectors/helpers.js';
import { status, type J } from './helpers.js';

test('a graph rule is planned and runs on its worker; a refused graph answers as before', async () => {
  const s = await startTestServer({ env: { KUIPER__BASIC__WORKERS: '2' } });
  const topic = uniqueTopic('graph');
  const tag = topic.replace(/\W/g, '_');
  const sub = await subscriber(`${topic}/out`);
  const pub = await publisher();
  const id = `graph_${tag}`;
  try {
    const graph = (filter: string) => ({
      nodes: {
        src: { type: 'source', nodeType: 'mqtt', props: { datasource: `${topic}/in` } },
        hot: { type: 'operator', nodeType: 'filter', props: { expr: filter } },
        twice: { type: 'operator', nodeType: 'function', props: { expr: 'abs(temperature * 2) as t2' } },
        pick: { type: 'operator', nodeType: 'pick', props: { fields: ['t2', 'n'] } },
        out: { type: 'sink', nodeType: 'mqtt', props: { server: 'tcp://127.0.0.1:1883', topic: `${topic}/out` } },
      },
      topo: { sources: ['src'], edges: { src: ['hot'], hot: ['twice'], twice: ['pick'], pick: ['out'] } },
    });
    let r = await s.req('POST', '/rules', { id, graph: graph('temperature > 50') });
    assert.equal(r.status, 201, r.text);
    const st: J = await status(s, id);
    assert.equal(st.status, 'running', JSON.stringify(st));
    assert.equal(st.worker, s.app.workers?.place(id), `the graph runs on its worker: ${JSON.stringify(st)}`);
    assert.ok('op_twice_0_records_in_total' in st && 'sink_out_0_records_out_total' in st, JSON.stringify(st));
    const topo = (await s.req('GET', `/rules/${id}/topo`)).json() as J;
    assert.deepEqual(topo.sources, ['source_src']);

    let n = 0;
    const end = Date.now() + 30_000;
    while (sub.messages.length === 0) {
      assert.ok(Date.now() < end, 'rows from the graph');
      await pub.publishAsync(`${topic}/in`, JSON.stringify({ n: n++, temperature: 10 }));
      await pub.publishAsync(`${topic}/in`, JSON.stringify({ n: n++, temperature: 60 }));
      await new Promise((res) => setTimeout(res, 100));
    }
    const rows = sub.messages.flatMap((m) => JSON.parse(m.text) as J[]);
    assert.ok(
      rows.every((row) => row.t2 === 120 && typeof row.n === 'number'),
      JSON.stringify(rows),
    );

    // refused by the worker's planner with eKuiper's code and text
    r = await s.req('POST', '/rules', { id: `${id}_bad`, graph: graph('nosuchfn(temperature) > 1') });
    assert.equal(r.status, 400, r.text);
    assert.deepEqual(r.json(), {
      error: 2101,
      message: 'parse filter hot with map[expr:nosuchfn(temperature) > 1] error: function nosuchfn not found',
    });
    assert.equal((await s.req('GET', `/rules/${id}_bad`)).status, 404);

    // a graph whose sink keeps its socket on the main thread (zmq) runs on its worker too
    const zmq = graph('temperature > 50');
    zmq.nodes.out = { type: 'sink', nodeType: 'zmq', props: { server: 'tcp://127.0.0.1:5599' } } as never;
    r = await s.req('POST', '/rules', { id: `${id}_zmq`, graph: zmq });
    assert.equal(r.status, 201, r.text);
    assert.equal((await status(s, `${id}_zmq`)).worker, s.app.workers?.place(`${id}_zmq`));
  } finally {
    await pub.endAsync();
    await sub.close();
    await s.dispose();
  }
});
