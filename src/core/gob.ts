/**
 * Go's `encoding/gob` for one value of type string, the form in which eKuiper's Redis store keeps every definition
 * (docs/runtime.md §10.1). A stream holding one string is a single message:
 *
 *   <message length: uint> <type id of string, 6: int> <field delta 0: uint> <byte length: uint> <UTF-8 bytes>
 *
 * Unsigned integers below 128 are one byte; larger ones are their big-endian bytes without leading zeros, preceded
 * by the negated byte count (0xFF for one byte, 0xFE for two, ...). Signed integers are shifted left by one, the low
 * bit set (and the rest complemented) for negative values. A stream may carry type definitions first (negative type
 * ids); they are skipped.
 */

const STRING_TYPE_ID = 6;

function uintBytes(x: number): number[] {
  if (x < 0x80) return [x];
  const bytes: number[] = [];
  for (let v = x; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return [256 - bytes.length, ...bytes];
}

function intBytes(i: number): number[] {
  return uintBytes(i < 0 ? -i * 2 - 1 : i * 2);
}

/** The gob stream of one string value. */
export function gobEncodeString(s: string): Buffer {
  const text = Buffer.from(s, 'utf8');
  const body = Buffer.concat([Buffer.from([...intBytes(STRING_TYPE_ID), 0, ...uintBytes(text.length)]), text]);
  return Buffer.concat([Buffer.from(uintBytes(body.length)), body]);
}

class Reader {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  uint(): number {
    if (this.pos >= this.buf.length) throw new Error('gob: unexpected end of data');
    const first = this.buf[this.pos++];
    if (first < 0x80) return first;
    const n = 256 - first;
    if (n > 8 || this.pos + n > this.buf.length) throw new Error('gob: invalid unsigned integer');
    let v = 0;
    for (let k = 0; k < n; k++) v = v * 256 + this.buf[this.pos++];
    return v;
  }

  int(): number {
    const u = this.uint();
    return u % 2 === 1 ? -(u + 1) / 2 : u / 2;
  }
}

/** Decodes a gob stream holding one string; throws when it holds anything else. */
export function gobDecodeString(data: Uint8Array): string {
  const r = new Reader(data);
  for (;;) {
    const length = r.uint();
    const end = r.pos + length;
    if (end > data.length) throw new Error('gob: message longer than the data');
    const typeId = r.int();
    if (typeId < 0) {
      // a type definition: not needed for a string
      r.pos = end;
      continue;
    }
    if (typeId !== STRING_TYPE_ID) throw new Error(`gob: value of type id ${typeId} is not a string`);
    if (r.uint() !== 0) throw new Error('gob: malformed singleton value');
    const n = r.uint();
    if (r.pos + n !== end) throw new Error('gob: string length does not match its message');
    return Buffer.from(data.buffer, data.byteOffset + r.pos, n).toString('utf8');
  }
}
