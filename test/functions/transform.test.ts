import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DateTime } from '../../src/values/index.js';
import { call, callError, lit, validate } from './helpers.js';

test('cast follows the conversion table', () => {
  assert.equal(call('cast', 101.5, 'bigint'), 101n);
  assert.equal(call('cast', 1.2, 'bigint'), 1n);
  assert.equal(call('cast', 5n, 'bigint'), 5n);
  assert.equal(call('cast', 1.2, 'string'), '1.2');
  assert.equal(call('cast', true, 'string'), 'true');
  assert.equal(call('cast', 1n, 'string'), '1');
  assert.equal(call('cast', 'true', 'boolean'), true);
  assert.equal(call('cast', '1', 'boolean'), true);
  assert.equal(call('cast', 0.0, 'boolean'), false);
  const f = call('cast', 1n, 'float');
  assert.equal(f, 1);
  assert.equal(typeof f, 'number');
  assert.deepEqual(call('cast', 'Ynl0ZWE=', 'bytea'), new Uint8Array(Buffer.from('bytea')));
  const d = call('cast', 1.62000273e9 * 1000, 'datetime') as DateTime;
  assert.ok(d instanceof DateTime);
  assert.equal(d.ms, 1620002730000);
  assert.equal(call('cast', null, 'bigint'), null);
});

test('cast errors', () => {
  assert.equal(callError('cast', 1n, 'bytea'), 'call func cast error: cannot convert int(1) to bytea');
  assert.equal(
    callError('cast', 1n, 'boolean'),
    'call func cast error: not supported type conversion, got error cannot convert int64(1) to bool',
  );
  assert.equal(
    callError('cast', 1n, 'nope'),
    'call func cast error: unknow type, only support bigint, float, string, boolean and datetime',
  );
  assert.match(validate('cast', lit.field(), lit.str('int'))!, /^validate function cast error: /);
  // ⚠ the reference reports parameter 1 for a number literal as the type
  assert.equal(
    validate('cast', lit.field(), lit.int(1n)),
    'validate function cast error: Expect string type for parameter 1',
  );
  assert.equal(
    validate('cast', lit.field(), lit.str('bool')),
    'validate function cast error: Expect one of following value for the 2nd parameter: bigint, float, string, boolean, datetime, bytea.',
  );
  assert.equal(validate('cast', lit.field(), lit.str('datetime')), undefined);
});

test('chr returns an int code', () => {
  assert.equal(call('chr', 0n), 0n);
  assert.equal(call('chr', 'a'), 97n);
  assert.equal(call('chr', 65.7), 65n);
  assert.equal(callError('chr', 'ab'), 'call func chr error: Parameter length cannot larger than 1.');
  assert.equal(validate('chr', lit.float(1.5)), 'validate function chr error: Expect int type for parameter 1');
});

test('base64 encode gives a string, decode gives bytes', () => {
  assert.equal(call('encode', 'hello', 'base64'), 'aGVsbG8=');
  assert.deepEqual(call('decode', 'aGVsbG8=', 'base64'), new Uint8Array(Buffer.from('hello')));
  assert.equal(callError('encode', 1n, 'base64'), 'call func encode error: Only string type can be encoded.');
  assert.match(callError('decode', '!!', 'base64'), /^call func decode error: fail to decode base64 string: /);
  assert.equal(
    validate('encode', lit.str('a'), lit.str('hex')),
    'validate function encode error: Only base64 is supported for the 2nd parameter.',
  );
  assert.equal(callError('decode', 1n, 'base64'), 'call func decode error: Only string type can be decoded.');
  assert.equal(
    validate('encode', lit.str('a'), lit.field()),
    'validate function encode error: Expect string type for parameter 2',
  );
});

test('compress and decompress round trip with zlib, gzip and flate', () => {
  for (const m of ['zlib', 'gzip', 'flate']) {
    const c = call('compress', 'hello hello hello', m);
    assert.ok(c instanceof Uint8Array, m);
    assert.deepEqual(call('decompress', c, m), new Uint8Array(Buffer.from('hello hello hello')));
  }
  assert.equal(call('compress', null, 'zlib'), null);
  assert.match(callError('compress', 'a', 'lz4'), /^call func compress error: unsupported compressor: lz4$/);
  assert.match(callError('decompress', 'not compressed', 'gzip'), /^call func decompress error: /);
});

test('trunc rounds half away from zero to n decimals', () => {
  assert.equal(call('trunc', 3.1415, 2n), 3.14);
  assert.equal(call('trunc', 3n, 2n), 3);
  assert.equal(call('trunc', 2.675, 1n), 2.7);
  assert.equal(call('trunc', -2.5, 0n), -3);
});

test('hex2dec and dec2hex', () => {
  assert.equal(call('hex2dec', '0x10'), 16n);
  assert.equal(call('hex2dec', 'ff'), 255n);
  assert.match(callError('hex2dec', 'zz'), /^call func hex2dec error: /);
  assert.equal(call('dec2hex', 16n), '0x10');
  assert.equal(call('dec2hex', 255.0), '0xff');
  assert.match(callError('dec2hex', 1.5), /^call func dec2hex error: /);
  assert.equal(
    validate('dec2hex', lit.int(16n)),
    'validate function dec2hex error: Expect string type for parameter 1',
  );
  assert.equal(callError('hex2dec', 1n), 'call func hex2dec error: invalid input type: 1 please input hex string');
  assert.equal(callError('hex2dec', '0xzz'), 'call func hex2dec error: invalid hexadecimal value: zz');
  assert.equal(validate('dec2hex', lit.field()), undefined);
});

test('hashes of the text form, lower-case hex; crc32 without padding', () => {
  const s = 'The quick brown fox jumps over the lazy dog';
  assert.equal(call('md5', s), '9e107d9d372bb6826bd81d3542a419d6');
  assert.equal(call('sha1', s), '2fd4e1c67a2d28fced849ee1bb76e7391b93eb12');
  assert.equal(call('sha256', s), 'd7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592');
  assert.equal(
    call('sha384', s),
    'ca737f1014a48f4c0b6dd43cb177b0afd9e5169367544c494011e3317dbf9a509cb1e5dc1e85a941bbee3d7f2afbc9b1',
  );
  assert.equal(
    call('sha512', s),
    '07e547d9586f6a73f73fbac0435ed76951218fb7d0c8d788a309d785436bbb642e93a252a954f23912547d1e8a3b5ed6e1bfd7097821233fa0538f3db854fee6',
  );
  assert.equal(call('crc32', s), '414fa339');
  assert.equal(call('crc32', 'a'), 'e8b7be43');
  assert.equal(call('crc32', '33'), 'a6216d9'); // 0x0a6216d9 printed without the leading zero
  assert.equal(call('md5', null), null);
  assert.equal(validate('md5', lit.int(1n)), 'validate function md5 error: Expect string type for parameter 1');
});
