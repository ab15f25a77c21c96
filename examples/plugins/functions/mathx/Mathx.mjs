// A function plugin with two SQL functions: cube(x) = x³ and clamp(x, lo, hi).

const isNumber = (a) => a.kind === 'int' || a.kind === 'float' || a.kind === 'field' || a.kind === 'other';

/** @type {import('eddy/plugin').FunctionsExport} */
export const Mathx = {
  version: '1.0.0',
  functions: {
    cube: {
      validate: (args) =>
        args.length !== 1 ? 'cube expects 1 argument' : isNumber(args[0]) ? undefined : 'cube expects a number',
      exec: ([x]) => {
        if (typeof x !== 'number') throw new Error(`cube of a non-number: ${JSON.stringify(x)}`);
        return x * x * x;
      },
    },
    clamp: {
      validate: (args) => (args.length !== 3 ? 'clamp expects 3 arguments' : undefined),
      exec: ([x, lo, hi]) => {
        if (typeof x !== 'number' || typeof lo !== 'number' || typeof hi !== 'number')
          throw new Error('clamp expects numbers');
        return x < lo ? lo : x > hi ? hi : x;
      },
    },
  },
};
