/** The function registry with every built-in of the functions layer. */
import { createBuiltinRegistry, type FunctionRegistry } from '../../src/functions/index.js';

export function registry(): FunctionRegistry {
  return createBuiltinRegistry();
}
