/** SQL functions: the registry and its definition types, the built-ins, and the validators plugins may reuse. */
export * from './registry.js';
export { registerBuiltins, createBuiltinRegistry } from './builtins.js';
export { parseDuration } from './datetime.js';
export { deepEqual, strictEqual } from './equality.js';
export { uuidV1 } from './other.js';
export * as validators from './validate.js';
