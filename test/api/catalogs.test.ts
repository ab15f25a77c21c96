/**
 * `GET /metadata/functions` and `/metadata/operators` generated from the registries (built-ins, a plugin's functions
 * in a group of their own, the graph operators with their input and output kinds), and `/stop` ending the server
 * from the loopback interface (docs/rest-api.md §16.10, §16.13).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../helpers/server.js';
import { startEddyProcess } from '../helpers/eddy-process.js';
import { waitFor } from '../helpers/process.js';
import { sampleZip, serveArchives } from '../extensions/native-fixture.js';

type Fn = { name: string; aggregate?: boolean; example: string; node: { category: string } };
type Group = { name: string; about: { description: { en_US: string } }; functions: Fn[] };
type Op = { name: string; node: { category: string; input: Record<string, string>; output: Record<string, string> } };

test('the function and operator palettes come from the registries, plugin functions included', async () => {
  const web = await serveArchives();
  const s = await startTestServer();
  try {
    const r = await s.req('POST', '/plugins/functions', {
      name: 'mathx',
      file: web.put('mathx.zip', sampleZip('functions/mathx')),
    });
    assert.equal(r.status, 201, r.text);
    const groups = (await s.req('GET', '/metadata/functions')).json() as Group[];
    const internal = groups.find((g) => g.name === 'internal')!;
    const byName = new Map(internal.functions.map((f) => [f.name, f]));
    assert.equal(byName.get('avg')?.aggregate, true);
    assert.equal(byName.get('abs')?.aggregate, undefined);
    assert.equal(byName.get('abs')?.example, 'abs(col1)');
    assert.equal(byName.get('abs')?.node.category, 'function');
    assert.ok(byName.size > 100, `${byName.size} built-ins`);
    assert.ok(!byName.has('cube'));
    const mathx = groups.find((g) => g.name === 'mathx')!;
    assert.deepEqual(mathx.functions.map((f) => f.name).sort(), ['clamp', 'cube']);

    const ops = (await s.req('GET', '/metadata/operators')).json() as Op[];
    const names = ops.map((o) => o.name).sort();
    assert.deepEqual(names, [
      'aggfunc',
      'filter',
      'function',
      'groupby',
      'join',
      'orderby',
      'pick',
      'script',
      'switch',
      'watermark',
      'window',
    ]);
    const window = ops.find((o) => o.name === 'window')!;
    assert.deepEqual(window.node.input, { type: 'row', rowType: 'any', collectionType: 'any' });
    assert.equal(window.node.output.type, 'collection');
    assert.equal(ops.find((o) => o.name === 'filter')!.node.output.type, 'same');
  } finally {
    await s.dispose();
    await web.close();
  }
});

test('POST /stop from the loopback interface answers, then the server exits', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-stop-'));
  try {
    const p = await startEddyProcess(home);
    const r = await p.req('POST', '/stop');
    assert.equal(r.status, 200);
    assert.equal(r.text, 'stop success');
    const alive = () => {
      try {
        process.kill(p.pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor(() => !alive(), 30_000, 'the server to exit');
    await p.stop();
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});
