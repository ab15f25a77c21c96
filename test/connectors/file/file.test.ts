import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { connectorsService, ctx, sinkNode, tempDir, waitFor } from '../e2-helpers.js';
import type { SourceEvent } from '../../../src/contracts/index.js';
import { EddyError } from '../../../src/core/errors.js';

function collect(): { events: SourceEvent[]; ended: () => boolean; onEnd: () => void } {
  let done = false;
  return { events: [], ended: () => done, onEnd: () => (done = true) };
}

type Conns = Awaited<ReturnType<typeof connectorsService>>['conns'];

/** The payloads a file source reads from `dir` with datasource `ds` and properties `props`, until it ends. */
async function readAll(conns: Conns, dir: string, ds: string, props: Record<string, unknown>): Promise<unknown[]> {
  const src = conns.registry.source('file')!();
  src.provision(ctx(), ds, { path: dir, ...props });
  const c = collect();
  await src.connect(
    ctx(),
    (ev) => c.events.push(ev),
    (e) => assert.fail(e),
    c.onEnd,
  );
  await waitFor(c.ended, 'end');
  await src.close(ctx());
  return c.events.map((e) => e.payload);
}

test('file source json: one row per array element, metadata file, read once then ends', async () => {
  const t = tempDir();
  writeFileSync(join(t.dir, 'a.json'), '[{"id":1,"name":"x"},{"id":2,"name":"y"}]');
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('file')!();
  src.provision(ctx(), 'a.json', { path: t.dir, fileType: 'json' });
  const c = collect();
  await src.connect(
    ctx(),
    (ev) => c.events.push(ev),
    (e) => assert.fail(e),
    c.onEnd,
  );
  await waitFor(c.ended, 'end of the read');
  assert.deepEqual(
    c.events.map((e) => e.payload),
    [
      { id: 1, name: 'x' },
      { id: 2, name: 'y' },
    ],
  );
  assert.deepEqual(c.events[0].meta, { file: join(t.dir, 'a.json') });
  await src.close(ctx());
  await close();
  t.remove();
});

test('file source csv: header, columns, default cols names, delimiter, ignored start/end lines', async () => {
  const t = tempDir();
  writeFileSync(join(t.dir, 'h.csv'), 'skip me\nid;name\n1;"a;b"\n2;"say ""hi"""\ntrailer\n');
  writeFileSync(join(t.dir, 'n.csv'), '1,x\n2,y\n');
  const { conns, close } = await connectorsService();
  const read = (ds: string, props: Record<string, unknown>): Promise<unknown[]> =>
    readAll(conns, t.dir, ds, { fileType: 'csv', ...props });
  assert.deepEqual(await read('h.csv', { hasHeader: true, delimiter: ';', ignoreStartLines: 1, ignoreEndLines: 1 }), [
    { id: '1', name: 'a;b' },
    { id: '2', name: 'say "hi"' },
  ]);
  assert.deepEqual(await read('n.csv', { columns: ['k', 'v'] }), [
    { k: '1', v: 'x' },
    { k: '2', v: 'y' },
  ]);
  assert.deepEqual(await read('n.csv', {}), [
    { cols0: '1', cols1: 'x' },
    { cols0: '2', cols1: 'y' },
  ]);
  await close();
  t.remove();
});

test('file source lines over a folder: each line is a payload for the stream format; then delete or move', async () => {
  const t = tempDir();
  const dir = join(t.dir, 'in');
  mkdirSync(dir);
  writeFileSync(join(dir, '1.txt'), '{"a":1}\n{"a":2}\n');
  writeFileSync(join(dir, '2.txt'), '{"a":3}\n');
  const moved = join(t.dir, 'moved');
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('file')!();
  src.provision(ctx(), 'in', { path: t.dir, fileType: 'lines', actionAfterRead: 2, moveTo: moved });
  const c = collect();
  await src.connect(
    ctx(),
    (ev) => c.events.push(ev),
    (e) => assert.fail(e),
    c.onEnd,
  );
  await waitFor(c.ended, 'end');
  assert.deepEqual(
    c.events.map((e) => [Buffer.from(e.payload as Uint8Array).toString(), e.meta.file]),
    [
      ['{"a":1}', join(dir, '1.txt')],
      ['{"a":2}', join(dir, '1.txt')],
      ['{"a":3}', join(dir, '2.txt')],
    ],
  );
  assert.deepEqual(readdirSync(dir), []);
  assert.deepEqual(readdirSync(moved).sort(), ['1.txt', '2.txt']);
  await src.close(ctx());

  writeFileSync(join(dir, 'd.txt'), 'x\n');
  const del = conns.registry.source('file')!();
  del.provision(ctx(), 'in/d.txt', { path: t.dir, fileType: 'lines', actionAfterRead: 1 });
  const d = collect();
  await del.connect(
    ctx(),
    (ev) => d.events.push(ev),
    (e) => assert.fail(e),
    d.onEnd,
  );
  await waitFor(d.ended, 'end');
  assert.equal(existsSync(join(dir, 'd.txt')), false);
  await del.close(ctx());
  await close();
  t.remove();
});

test('file source lines: CRLF, blank and whitespace-only lines skipped, ignored start/end lines, bytes of their own for a non-JSON format', async () => {
  const t = tempDir();
  // the no-break space (U+00A0) is whitespace to String.prototype.trim too
  writeFileSync(join(t.dir, 'l.txt'), 'head\r\n{"a":1}\r\n\r\n  \t\n\u00a0\n{"a":"é"}\nx y\ntail\n');
  writeFileSync(join(t.dir, 'e.txt'), '');
  const { conns, close } = await connectorsService();
  const read = async (ds: string, props: Record<string, unknown>): Promise<Uint8Array[]> =>
    (await readAll(conns, t.dir, ds, { fileType: 'lines', ...props })) as Uint8Array[];
  const text = (xs: Uint8Array[]) => xs.map((x) => Buffer.from(x).toString());
  assert.deepEqual(text(await read('l.txt', {})), ['head', '{"a":1}', '{"a":"é"}', 'x y', 'tail']);
  // the skipped lines are counted among the file's lines, blank ones included
  assert.deepEqual(text(await read('l.txt', { ignoreStartLines: 1, ignoreEndLines: 2 })), ['{"a":1}', '{"a":"é"}']);
  assert.deepEqual(text(await read('l.txt', { ignoreStartLines: 9 })), []);
  assert.deepEqual(await read('e.txt', {}), []);
  // a binary row keeps the line's bytes: they are a copy, not a view holding the whole file
  const own = await read('l.txt', { format: 'binary' });
  assert.deepEqual(text(own), ['head', '{"a":1}', '{"a":"é"}', 'x y', 'tail']);
  for (const x of own) assert.equal(x.buffer.byteLength, x.byteLength);
  await close();
  t.remove();
});

test('file source as a table re-reads every interval and emits one batch per read; gzip input', async () => {
  const t = tempDir();
  writeFileSync(join(t.dir, 't.json.gz'), gzipSync('[{"k":1},{"k":2}]'));
  const { conns, close } = await connectorsService();
  const src = conns.registry.source('file')!();
  src.provision(ctx(), 't.json.gz', {
    path: t.dir,
    fileType: 'json',
    interval: 100,
    isTable: true,
    decompression: 'gzip',
  });
  const c = collect();
  await src.connect(
    ctx(),
    (ev) => c.events.push(ev),
    (e) => assert.fail(e),
    c.onEnd,
  );
  await waitFor(() => c.events.length >= 2, 'two reads');
  writeFileSync(join(t.dir, 't.json.gz'), gzipSync('[{"k":3}]'));
  await waitFor(() => c.events.some((e) => JSON.stringify(e.payload) === '[{"k":3}]'), 'the new content');
  await src.close(ctx());
  assert.deepEqual(c.events[0].payload, [{ k: 1 }, { k: 2 }]);
  assert.equal(c.ended(), false, 'a periodic source does not end');
  await close();
  t.remove();
});

test('file source lines as a table: each read of a JSON-lines file is one batch', async () => {
  const t = tempDir();
  writeFileSync(join(t.dir, 't.jsonl'), '{"k":1}\n{"k":2}\n');
  const { conns, close } = await connectorsService();
  assert.deepEqual(await readAll(conns, t.dir, 't.jsonl', { fileType: 'lines', isTable: true, format: 'json' }), [
    [{ k: 1 }, { k: 2 }],
  ]);
  await close();
  t.remove();
});

test('file source: a missing file and malformed JSON are reported as errors; bad properties rejected', async () => {
  const t = tempDir();
  writeFileSync(join(t.dir, 'bad.json'), '[{"a":1},');
  const { conns, close } = await connectorsService();
  for (const ds of ['missing.json', 'bad.json']) {
    const src = conns.registry.source('file')!();
    src.provision(ctx(), ds, { path: t.dir });
    const errors: string[] = [];
    let ended = false;
    await src.connect(
      ctx(),
      () => assert.fail('no rows'),
      (e) => errors.push(e.message),
      () => (ended = true),
    );
    await waitFor(() => ended, 'end');
    assert.equal(errors.length, 1, ds);
    await src.close(ctx());
  }
  const mk = () => conns.registry.source('file')!();
  assert.throws(
    () => mk().provision(ctx(), 'x', { path: t.dir, fileType: 'xml' }),
    (e: unknown) => e instanceof EddyError && /file type xml/.test(e.message),
  );
  assert.throws(() => mk().provision(ctx(), 'x', { path: t.dir, actionAfterRead: 2 }), /moveTo/);
  assert.throws(() => mk().provision(ctx(), 'x', {}), /Path/);
  await close();
  t.remove();
});

test('file sink lines/json/csv write exact bytes; templated path opens one file per value; rolling by count', async () => {
  const t = tempDir();
  const { conns, close } = await connectorsService();
  const lines = sinkNode(conns, 'file', { path: join(t.dir, 'out-{{.room}}.txt'), sendSingle: true });
  const json = sinkNode(conns, 'file', { path: join(t.dir, 'out.json'), fileType: 'json' });
  const csv = sinkNode(conns, 'file', {
    path: join(t.dir, 'out.csv'),
    fileType: 'csv',
    format: 'delimited',
    hasHeader: true,
    fields: ['room', 't'],
    sendSingle: true,
  });
  const roll = sinkNode(conns, 'file', {
    path: join(t.dir, 'roll', 'r.log'),
    rollingCount: 2,
    rollingNamePattern: 'suffix',
    sendSingle: true,
  });
  for (const n of [lines, json, csv, roll]) await n.open();
  lines.push([
    { room: 'a', t: 1 },
    { room: 'b', t: 2 },
    { room: 'a', t: 3 },
  ]);
  json.push([{ room: 'a', t: 1 }]);
  json.push([{ room: 'b', t: 2.5 }]);
  csv.push([{ room: 'a', t: 1 }]);
  csv.push([{ room: 'b', t: 2 }]);
  roll.push([{ i: 1 }, { i: 2 }, { i: 3 }]);
  await waitFor(
    () => [lines, json, csv, roll].every((n) => n.metrics.recordsOut >= (n === lines || n === roll ? 3 : 2)),
    'writes',
  );
  for (const n of [lines, json, csv, roll]) await n.close();
  assert.equal(readFileSync(join(t.dir, 'out-a.txt'), 'utf8'), '{"room":"a","t":1}\n{"room":"a","t":3}');
  assert.equal(readFileSync(join(t.dir, 'out-b.txt'), 'utf8'), '{"room":"b","t":2}');
  assert.equal(readFileSync(join(t.dir, 'out.json'), 'utf8'), '[[{"room":"a","t":1}],[{"room":"b","t":2.5}]]');
  assert.equal(readFileSync(join(t.dir, 'out.csv'), 'utf8'), 'room,t\na,1\nb,2');
  const rolled = readdirSync(join(t.dir, 'roll')).sort();
  assert.equal(rolled.length, 2);
  assert.ok(
    rolled.every((f) => /^r-\d+\.log$/.test(f)),
    rolled.join(','),
  );
  const contents = rolled.map((f) => readFileSync(join(t.dir, 'roll', f), 'utf8')).sort();
  assert.deepEqual(contents, ['{"i":1}\n{"i":2}', '{"i":3}']);
  await close();
  t.remove();
});

test('file sink gzip compresses the file on close; csv requires the delimited format', async () => {
  const t = tempDir();
  const { conns, close } = await connectorsService();
  const gz = sinkNode(conns, 'file', { path: join(t.dir, 'o.gz'), compression: 'gzip', sendSingle: true });
  await gz.open();
  gz.push([{ a: 1 }, { a: 2 }]);
  await waitFor(() => gz.metrics.recordsOut >= 2, 'writes');
  await gz.close();
  assert.equal(gunzipSync(readFileSync(join(t.dir, 'o.gz'))).toString(), '{"a":1}\n{"a":2}');
  assert.throws(
    () => sinkNode(conns, 'file', { path: join(t.dir, 'x.csv'), fileType: 'csv' }),
    /format must be delimited/,
  );
  assert.throws(
    () => sinkNode(conns, 'file', { path: 'x', rollingCount: 0, rollingInterval: 0 }),
    /rollingInterval and rollingCount/,
  );
  await close();
  t.remove();
});

test('file sink rollingInterval closes an old file on the check timer (json gets its closing bracket)', async () => {
  const t = tempDir();
  const { conns, close } = await connectorsService();
  const path = join(t.dir, 'timed.json');
  const node = sinkNode(conns, 'file', {
    path,
    fileType: 'json',
    rollingInterval: 100,
    checkInterval: 50,
    rollingCount: 0,
    sendSingle: true,
  });
  await node.open();
  node.push([{ a: 1 }, { a: 2 }]);
  await waitFor(() => existsSync(path) && readFileSync(path, 'utf8').endsWith(']'), 'closed by the timer');
  assert.equal(readFileSync(path, 'utf8'), '[{"a":1},{"a":2}]');
  await node.close();
  await close();
  t.remove();
});
