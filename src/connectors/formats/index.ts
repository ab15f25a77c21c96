/** Registers the built-in formats: json, binary, delimited. */
import type { Registry } from '../registry.js';
import { JsonFormat } from './json.js';
import { BinaryFormat } from './binary.js';
import { DelimitedFormat } from './delimited.js';

export { JsonFormat } from './json.js';
export { BinaryFormat } from './binary.js';
export { DelimitedFormat } from './delimited.js';
export { encodeJson } from './jsonenc.js';
export { parseJsonExact } from './jsonparse.js';

export function registerBuiltinFormats(registry: Registry): void {
  registry.registerFormat('json', (opts) => new JsonFormat(opts));
  registry.registerFormat('binary', (opts) => new BinaryFormat(opts));
  registry.registerFormat('delimited', (opts) => new DelimitedFormat(opts));
}
