/**
 * Go's gob encoding of a string value (src/core/gob.ts), checked against the bytes Go's encoder writes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gobDecodeString, gobEncodeString } from '../../src/core/gob.js';

test('a short string: length, type id 6 (as int 12), field delta 0, byte count, bytes', () => {
  const hello = Buffer.from([0x08, 0x0c, 0x00, 0x05, 0x68, 0x65, 0x6c, 0x6c, 0x6f]);
  assert.deepEqual(gobEncodeString('hello'), hello);
  assert.equal(gobDecodeString(hello), 'hello');
  assert.deepEqual(gobEncodeString(''), Buffer.from([0x03, 0x0c, 0x00, 0x00]));
});

test('counts of 128 and more take the negated-byte-count form; UTF-8 text round-trips', () => {
  const s = 'x'.repeat(200);
  const enc = gobEncodeString(s);
  // message length 1 + 1 + 2 + 200 = 204 → FF CC; string length 200 → FF C8
  assert.deepEqual([...enc.subarray(0, 6)], [0xff, 0xcc, 0x0c, 0x00, 0xff, 0xc8]);
  assert.equal(enc.length, 206);
  assert.equal(gobDecodeString(enc), s);
  const long = 'é'.repeat(40_000);
  const e2 = gobEncodeString(long);
  // message of 80,006 bytes: FD 01 38 86; then type id, delta, and 80,000: FD 01 38 80
  assert.deepEqual([...e2.subarray(0, 10)], [0xfd, 0x01, 0x38, 0x86, 0x0c, 0x00, 0xfd, 0x01, 0x38, 0x80]);
  assert.equal(gobDecodeString(e2), long);
  const json = '{"id":"r1","sql":"SELECT * FROM démo","actions":[{"log":{}}]}';
  assert.equal(gobDecodeString(gobEncodeString(json)), json);
});

test('values that are no gob string are refused; type definitions before the value are skipped', () => {
  // the int 7: type id 2 (as int 4)
  assert.throws(() => gobDecodeString(Buffer.from([0x03, 0x04, 0x00, 0x0e])), /not a string/);
  assert.throws(() => gobDecodeString(Buffer.from([0x08, 0x0c, 0x00, 0x05, 0x68])), /longer than the data/);
  assert.throws(() => gobDecodeString(Buffer.from([])), /end of data/);
  // a message with a negative type id (a definition) first
  const def = Buffer.from([0x03, 0x01, 0xaa, 0xbb]);
  assert.equal(gobDecodeString(Buffer.concat([def, gobEncodeString('after')])), 'after');
});
