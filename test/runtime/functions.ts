/** The function registry with every built-in function of the functions layer. */
import { createBuiltinRegistry, type FunctionRegistry } from '../../src/functions/index.js';

export function registry(): FunctionRegistry {
  return createBuiltinRegistry();
}
