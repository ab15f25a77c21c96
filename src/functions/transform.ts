/** Conversion and transform functions (docs/sql.md §7.3) and hashing functions (docs/sql.md §7.4). */
import { createHash } from 'node:crypto';
import * as zlib from 'node:zlib';
import {
  cast,
  CAST_TYPES,
  decodeBase64Strict,
  defaultZone,
  EvalError,
  textOf,
  truncToInt,
  typedText,
  utf8Bytes,
  type Value,
} from '../values/index.js';
import type { ArgInfo, FunctionDef } from './registry.js';
import { scalar } from './define.js';
import { roundHalfAway } from './math.js';
import {
  all,
  exactly,
  expect,
  INT,
  intArg,
  mustBe,
  numberArg,
  rejects,
  STRING,
  stringArg,
  type Validator,
} from './validate.js';

const castValidate: Validator = all(
  exactly(2),
  // ⚠ the reference names parameter 1 when the *type* argument is a number or boolean literal
  (a: readonly ArgInfo[]) =>
    ['int', 'float', 'bool', 'boolExpr', 'unit'].includes(a[1].kind) ? expect(STRING, 0) : undefined,
  (a: readonly ArgInfo[]) => {
    if (a[1].kind === 'string' && !(CAST_TYPES as readonly string[]).includes(a[1].literal as string)) {
      return `Expect one of following value for the 2nd parameter: ${CAST_TYPES.join(', ')}.`;
    }
    return undefined;
  },
);

const base64Validate: Validator = all(
  exactly(2),
  stringArg(0),
  mustBe(1, STRING, ['string']),
  (a: readonly ArgInfo[]) =>
    a[1].literal !== 'base64' ? 'Only base64 is supported for the 2nd parameter.' : undefined,
);

type Codec = { compress(b: Uint8Array): Uint8Array; decompress(b: Uint8Array): Uint8Array };

const codecs: Record<string, Codec> = {
  zlib: { compress: (b) => zlib.deflateSync(b), decompress: (b) => zlib.inflateSync(b) },
  gzip: { compress: (b) => zlib.gzipSync(b), decompress: (b) => zlib.gunzipSync(b) },
  flate: { compress: (b) => zlib.deflateRawSync(b), decompress: (b) => zlib.inflateRawSync(b) },
};
// zstd exists in node:zlib from Node 22.15/23.8 only.
const z = zlib as unknown as Record<string, ((b: Uint8Array) => Uint8Array) | undefined>;
if (typeof z.zstdCompressSync === 'function' && typeof z.zstdDecompressSync === 'function') {
  codecs.zstd = { compress: z.zstdCompressSync, decompress: z.zstdDecompressSync };
}

function codec(method: Value): Codec {
  const m = textOf(method);
  const c = codecs[m];
  if (!c) throw new EvalError(`unsupported compressor: ${m}`);
  return c;
}

function bytesArg(v: Value): Uint8Array {
  if (typeof v === 'string') return utf8Bytes(v);
  if (v instanceof Uint8Array) return v;
  throw new EvalError(`require string or bytea parameter, but got ${typedText(v)}`);
}

function asBytes(b: Buffer | Uint8Array): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}

function hash(name: string, algo: string): FunctionDef {
  return scalar(name, 'N', all(exactly(1), stringArg(0)), (a) =>
    createHash(algo).update(textOf(a[0]), 'utf8').digest('hex'),
  );
}

let crcTable: Uint32Array | undefined;

/** IEEE CRC-32 (zlib.crc32 is missing from older Node 20 releases). */
function crc32(b: Uint8Array): number {
  const native = (zlib as unknown as { crc32?: (d: Uint8Array) => number }).crc32;
  if (native) return native(b);
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let c = 0xffffffff;
  for (let i = 0; i < b.length; i++) c = crcTable[(c ^ b[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export const transformFunctions: FunctionDef[] = [
  scalar('cast', 'N', castValidate, (a) => cast(a[0], textOf(a[1]), defaultZone())),
  scalar('chr', 'N', all(exactly(1), rejects(0, INT, ['float', 'bool', 'boolExpr', 'unit'])), (a) => {
    const v = a[0];
    if (typeof v === 'bigint') return v;
    if (typeof v === 'number') return truncToInt(v);
    if (typeof v === 'string') {
      const b = utf8Bytes(v);
      if (b.length > 1) throw new EvalError('Parameter length cannot larger than 1.');
      if (b.length === 0) throw new EvalError('Parameter length cannot be empty.');
      return BigInt(b[0]);
    }
    throw new EvalError('Only bigint, float and string type can be convert to char type.');
  }),
  scalar('encode', 'N', base64Validate, (a) => {
    if (typeof a[0] !== 'string') throw new EvalError('Only string type can be encoded.');
    return Buffer.from(a[0], 'utf8').toString('base64');
  }),
  scalar('decode', 'N', base64Validate, (a) => {
    if (typeof a[0] !== 'string') throw new EvalError('Only string type can be decoded.');
    const s = a[0];
    const b = decodeBase64Strict(s);
    if (!b) throw new EvalError(`fail to decode base64 string: illegal base64 data at input byte ${badOffset(s)}`);
    return b;
  }),
  scalar('compress', 'N', all(exactly(2), stringArg(0), stringArg(1)), (a) =>
    asBytes(codec(a[1]).compress(bytesArg(a[0]))),
  ),
  scalar('decompress', 'N', all(exactly(2), stringArg(0), stringArg(1)), (a) => {
    const c = codec(a[1]);
    try {
      return asBytes(c.decompress(bytesArg(a[0])));
    } catch (e) {
      if (e instanceof EvalError) throw e;
      throw new EvalError(`fail to decompress: ${(e as Error).message}`);
    }
  }),
  scalar('trunc', 'N', all(exactly(2), numberArg(0), intArg(1)), (a) => {
    const x = a[0];
    if (typeof x !== 'number' && typeof x !== 'bigint')
      throw new EvalError(`cannot convert ${typedText(x)} to float64`);
    const n = a[1];
    if (typeof n !== 'bigint' && !(typeof n === 'number' && Number.isInteger(n))) {
      throw new EvalError('The 2nd parameter must be int value.');
    }
    const p = Math.pow(10, Number(n));
    return roundHalfAway(Number(x) * p) / p;
  }),
  scalar('hex2dec', 'N', all(exactly(1), stringArg(0)), (a) => {
    const v = a[0];
    if (typeof v !== 'string') throw new EvalError(`invalid input type: ${textOf(v)} please input hex string`);
    const hex = v.startsWith('0x') ? v.slice(2) : v;
    const m = /^([+-]?)([0-9a-fA-F]+)$/.exec(hex);
    let n = m ? BigInt('0x' + m[2]) : undefined;
    if (n !== undefined && m![1] === '-') n = -n;
    if (n === undefined || n !== BigInt.asIntN(64, n)) throw new EvalError(`invalid hexadecimal value: ${hex}`);
    return n;
  }),
  scalar('dec2hex', 'N', all(exactly(1), stringArg(0)), (a) => {
    const v = a[0];
    let n: bigint;
    if (typeof v === 'bigint') n = v;
    else if (typeof v === 'number' && Number.isInteger(v)) n = BigInt(v);
    else throw new EvalError(`${expect(INT, 0)}, but got ${typedText(v)}`);
    return n < 0n ? '0x-' + (-n).toString(16) : '0x' + n.toString(16);
  }),
  hash('md5', 'md5'),
  hash('sha1', 'sha1'),
  hash('sha256', 'sha256'),
  hash('sha384', 'sha384'),
  hash('sha512', 'sha512'),
  scalar('crc32', 'N', all(exactly(1), stringArg(0)), (a) => crc32(utf8Bytes(textOf(a[0]))).toString(16)),
];

function badOffset(s: string): number {
  for (let i = 0; i < s.length; i++) if (!/[A-Za-z0-9+/=]/.test(s[i])) return i;
  return Math.max(0, s.length - (s.length % 4 || 4));
}
