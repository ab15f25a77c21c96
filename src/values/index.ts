/** The runtime value model and everything that operates on values. */
export * from './value.js';
export * from './errors.js';
export * from './text.js';
export * from './ops.js';
export * from './like.js';
export * from './json.js';
export * from './datetime.js';
export * from './convert.js';
