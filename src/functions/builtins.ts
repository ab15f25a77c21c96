/** Registers every built-in function of docs/sql.md §7 into a registry, exactly as plugins register theirs. */
import { FunctionRegistry } from './registry.js';
import { mathFunctions } from './math.js';
import { stringFunctions } from './string.js';
import { transformFunctions } from './transform.js';
import { jsonFunctions } from './json.js';
import { arrayFunctions } from './array.js';
import { objectFunctions } from './object.js';
import { datetimeFunctions } from './datetime.js';
import { aggregateFunctions } from './aggregate.js';
import { analyticFunctions } from './analytic.js';
import { otherFunctions } from './other.js';

export function registerBuiltins(reg: FunctionRegistry): FunctionRegistry {
  const all = [
    ...mathFunctions,
    ...stringFunctions,
    ...transformFunctions,
    ...jsonFunctions,
    ...arrayFunctions((name) => reg.get(name)),
    ...objectFunctions,
    ...datetimeFunctions,
    ...aggregateFunctions,
    ...analyticFunctions,
    ...otherFunctions,
  ];
  for (const def of all) reg.register(def);
  return reg;
}

/** A fresh registry holding the built-ins. */
export function createBuiltinRegistry(): FunctionRegistry {
  return registerBuiltins(new FunctionRegistry());
}
