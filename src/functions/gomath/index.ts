/**
 * Go's `math` package results, bit for bit, for the SQL math functions whose V8 built-ins round differently
 * (docs/sql.md §7.1): eKuiper computes its math functions with Go's `math` package as compiled for amd64, and
 * test/functions/gomath/vectors.json holds Go's results these must reproduce.
 */
export { goExp, goLog, goLog10 } from './explog.js';
export { goCosh, goSinh, goTanh } from './hyperbolic.js';
export { goPow } from './pow.js';
export { goAcos, goAsin, goAtan, goAtan2, goCos, goCot, goSin, goTan } from './trig.js';
