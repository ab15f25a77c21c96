/**
 * Payload compression used by sources (`decompression`) and sinks (`compression`), docs/runtime.md §2.3: `gzip`, `zlib`
 * and `flate` (raw deflate). Names are case-sensitive. zstd is not available on Node 20 without a native add-on,
 * so it is rejected like any unknown name.
 */
import { deflateRawSync, deflateSync, gunzipSync, gzipSync, inflateRawSync, inflateSync } from 'node:zlib';

export const COMPRESSIONS = ['gzip', 'zlib', 'flate'] as const;
export type Compression = (typeof COMPRESSIONS)[number];

/** Checks a configured algorithm name; throws `unsupported compressor: <name>` otherwise. */
export function checkCompression(name: string): Compression {
  if ((COMPRESSIONS as readonly string[]).includes(name)) return name as Compression;
  throw new Error(`unsupported compressor: ${name}`);
}

export function decompress(algorithm: Compression, data: Uint8Array): Uint8Array {
  switch (algorithm) {
    case 'gzip':
      return gunzipSync(data);
    case 'zlib':
      return inflateSync(data);
    case 'flate':
      return inflateRawSync(data);
  }
}

export function compress(algorithm: Compression, data: Uint8Array): Uint8Array {
  switch (algorithm) {
    case 'gzip':
      return gzipSync(data);
    case 'zlib':
      return deflateSync(data);
    case 'flate':
      return deflateRawSync(data);
  }
}
