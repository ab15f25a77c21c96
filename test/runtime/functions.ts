/** The function registry with every built-in function module of the functions layer. */
import { FunctionRegistry } from '../../src/functions/registry.js';
import { mathFunctions } from '../../src/functions/math.js';
import { stringFunctions } from '../../src/functions/string.js';
import { transformFunctions } from '../../src/functions/transform.js';
import { objectFunctions } from '../../src/functions/object.js';
import { jsonFunctions } from '../../src/functions/json.js';
import { arrayFunctions } from '../../src/functions/array.js';
import { datetimeFunctions } from '../../src/functions/datetime.js';

export function registry(): FunctionRegistry {
  const r = new FunctionRegistry();
  for (const d of [...mathFunctions, ...stringFunctions, ...transformFunctions, ...objectFunctions, ...jsonFunctions, ...datetimeFunctions]) r.register(d);
  for (const d of arrayFunctions((n) => r.get(n))) r.register(d);
  return r;
}
