import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonFormat } from '../../../src/connectors/formats/json.js';
import { BinaryFormat } from '../../../src/connectors/formats/binary.js';
import { DelimitedFormat } from '../../../src/connectors/formats/delimited.js';
import { decompress, compress, checkCompression } from '../../../src/core/compression.js';
import type { StreamField } from '../../../src/sql/schema.js';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

test('schemaless json keeps every field and makes every number a float; arrays fan out', () => {
  const f = new JsonFormat({ schema: null });
  assert.deepEqual(f.decode(enc('{"a":5,"b":"x","c":{"d":[1,2]},"e":null}')), {
    a: 5,
    b: 'x',
    c: { d: [1, 2] },
    e: null,
  });
  const big = f.decode(enc('{"a":12345678901234567890}')) as Record<string, unknown>;
  assert.equal(typeof big.a, 'number');
  assert.deepEqual(f.decode(enc('[{"a":1},{"a":2}]')), [{ a: 1 }, { a: 2 }]);
  assert.throws(
    () => f.decode(enc('42')),
    /only map\[string\]interface\{\} and \[\]map\[string\]interface\{\} is supported/,
  );
  assert.throws(() => f.decode(enc('{"a":')));
});

const schema: StreamField[] = [
  { name: 'id', type: { kind: 'bigint' } },
  { name: 'temp', type: { kind: 'float' } },
  { name: 'name', type: { kind: 'string' } },
  { name: 'ok', type: { kind: 'boolean' } },
  { name: 'raw', type: { kind: 'bytea' } },
  { name: 'tags', type: { kind: 'array', element: { kind: 'bigint' } } },
  { name: 'rec', type: { kind: 'struct', fields: [{ name: 'a', type: { kind: 'bigint' } }] } },
];

test('typed json converts declared fields to their types with full 64-bit ints', () => {
  const f = new JsonFormat({ schema });
  const row = f.decode(
    enc(
      '{"id":9223372036854775807,"temp":20,"name":12.5,"ok":1,"raw":"AQI=","tags":[1,2],"rec":{"a":3},"extra":"dropped","n":7}',
    ),
  );
  assert.deepEqual(row, {
    id: 9223372036854775807n,
    temp: 20,
    name: '12.5',
    ok: true,
    raw: new Uint8Array([1, 2]),
    tags: [1n, 2n],
    rec: { a: 3n },
  });
  assert.deepEqual(f.decode(enc('{"id":null,"ok":"false"}')), { id: null, ok: false });
});

test('typed json errors: wrong types, and the object-under-unknown-key quirk at every depth', () => {
  const f = new JsonFormat({ schema });
  assert.throws(() => f.decode(enc('{"id":"7"}')), { message: 'id has wrong type:string, expect:bigint' });
  assert.throws(() => f.decode(enc('{"id":1.5}')), { message: 'id has wrong type:number, expect:bigint' });
  assert.throws(() => f.decode(enc('{"name":true}')), { message: 'name has wrong type:true, expect:string' });
  assert.throws(() => f.decode(enc('{"other":{"x":1}}')), { message: 'other has wrong type:object, expect:null' });
  assert.throws(() => f.decode(enc('{"other":[1]}')), { message: 'other has wrong type:array, expect:null' });
  assert.throws(() => f.decode(enc('{"rec":{"a":1,"b":{"c":1}}}')), {
    message: 'b has wrong type:object, expect:null',
  });
  // a struct member the rule does not navigate to is dropped when scalar
  assert.deepEqual(f.decode(enc('{"rec":{"a":1,"b":2}}')), { rec: { a: 1n } });
  // an empty known set (the rule reads no declared field) still rejects objects
  const none = new JsonFormat({ schema: [] });
  assert.deepEqual(none.decode(enc('{"a":1}')), {});
  assert.throws(() => none.decode(enc('{"a":{}}')), { message: 'a has wrong type:object, expect:null' });
});

test('json encoding follows Go: sorted keys, html escaping, ints and floats', () => {
  const f = new JsonFormat();
  assert.equal(dec(f.encode([{ b: 1.5, a: 2n, c: '<&>' }])), '[{"a":2,"b":1.5,"c":"\\u003c\\u0026\\u003e"}]');
  assert.equal(dec(f.encode({ x: 1e21, y: 1e-7, z: 2.0 })), '{"x":1e+21,"y":1e-7,"z":2}');
  assert.throws(() => f.encode({ x: Number.NaN }));
});

test('binary: payload under self or the single bytea field; encode sends the bytes back', () => {
  const bytes = new Uint8Array([0, 255, 7]);
  assert.deepEqual(new BinaryFormat({ schema: null }).decode(bytes), { self: bytes });
  const one = new BinaryFormat({ schema: [{ name: 'img', type: { kind: 'bytea' } }] });
  assert.deepEqual(one.decode(bytes), { img: bytes });
  assert.deepEqual(one.encode({ img: bytes }), bytes);
  assert.throws(() => one.encode({ a: 1, b: 2 }));
});

test('delimited: col<i> names on decode, fields order or sorted keys on encode', () => {
  const f = new DelimitedFormat({ delimiter: '|' });
  assert.deepEqual(f.decode(enc('1|a|2.5')), { col0: '1', col1: 'a', col2: '2.5' });
  assert.equal(dec(f.encode({ b: 2n, a: 'x', c: 1.5 })), 'x|2|1.5');
  // the order of the first encoded row is kept
  assert.equal(dec(f.encode({ c: 3.25, a: 'y', b: 1n })), 'y|1|3.25');
  const ordered = new DelimitedFormat({ fields: ['c', 'a'] });
  assert.equal(dec(ordered.encode({ a: 'x', c: true, z: 1 })), 'true,x');
  assert.throws(() => ordered.encode([{ a: 1 }]), /sendSingle/);
});

test('decompression: gzip, zlib, flate round trip; unknown names rejected', () => {
  const data = enc('{"a":1}');
  for (const alg of ['gzip', 'zlib', 'flate'] as const)
    assert.deepEqual(dec(decompress(alg, compress(alg, data))), '{"a":1}');
  assert.throws(() => checkCompression('GZIP'), /unsupported compressor: GZIP/);
});
