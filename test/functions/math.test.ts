import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, callError, lit, validate } from './helpers.js';

test('abs keeps the kind; non-numbers are errors', () => {
  assert.equal(call('abs', -10n), 10n);
  assert.equal(call('abs', -10.5), 10.5);
  assert.equal(callError('abs', 'x'), 'call func abs error: only float64 & int type are supported');
});

test('trigonometric and exponential functions return floats, NaN becomes null', () => {
  assert.equal(call('acos', 1n), 0);
  assert.equal(call('acos', 10n), null);
  assert.equal(call('asin', 1n), 1.5707963267948966);
  assert.equal(call('atan', 1n), 0.7853981633974483);
  assert.equal(call('atan2', 1n, 1n), 0.7853981633974483);
  assert.equal(call('cos', 0n), 1);
  assert.equal(call('cosh', 0n), 1);
  assert.equal(call('sin', 0n), 0);
  assert.equal(call('sinh', 0n), 0);
  assert.equal(call('tan', 0n), 0);
  assert.equal(call('tanh', 1n), 0.7615941559557649);
  assert.equal(call('exp', 1.2), 3.3201169227365472);
  assert.equal(call('exp', 0n), 1);
  assert.equal(call('ln', 1n), 0);
  assert.equal(call('ln', 10n), 2.302585092994046);
  assert.equal(call('ln', 0n), -Infinity);
  assert.equal(call('log', 10n), 1);
  assert.equal(call('log', 2n, 8n), 3);
  assert.equal(call('sqrt', 4n), 2);
  assert.equal(call('sqrt', -10n), null);
  assert.equal(callError('sin', 'x'), 'call func sin error: cannot convert string(x) to float64');
});

test('cot of zero is out of range', () => {
  assert.equal(callError('cot', 0n), 'call func cot error: out-of-range error');
  assert.equal(typeof call('cot', 1n), 'number');
});

test('rounding functions return floats; round halves away from zero', () => {
  assert.equal(call('ceil', 1.6), 2);
  assert.equal(call('ceil', -10.5), -10);
  assert.equal(call('ceiling', 10.5), 11);
  assert.equal(call('floor', -10.5), -11);
  assert.equal(call('floor', 10.5), 10);
  assert.equal(call('round', 10.2), 10);
  assert.equal(call('round', -10.5), -11);
  assert.equal(call('round', 10.5), 11);
  assert.equal(typeof call('round', 10n), 'number');
});

test('mod, power, radians, degrees, sign, pi, rand', () => {
  assert.equal(call('mod', 10n, 3n), 1);
  assert.equal(call('mod', -10.5, 2n), -0.5);
  assert.equal(call('mod', 10.5, 2n), 0.5);
  assert.equal(call('power', 10n, 3n), 1000);
  assert.equal(call('pow', -10n, 2n), 100);
  assert.equal(call('power', -10.5, 2n), 110.25);
  assert.equal(call('radians', 180n), 3.141592653589793);
  assert.equal(call('degrees', (call('pi') as number) / 2), 90);
  assert.equal(call('sign', 10.2), 1n);
  assert.equal(call('sign', -2n), -1n);
  assert.equal(call('sign', 0n), 0n);
  assert.equal(call('pi'), 3.141592653589793);
  const r = call('rand') as number;
  assert.ok(r >= 0 && r < 1);
});

test('bit functions on ints and integral floats', () => {
  assert.equal(call('bitand', 10n, 2n), 2n);
  assert.equal(call('bitand', -10n, 2n), 2n);
  assert.equal(call('bitor', -10n, 2n), -10n);
  assert.equal(call('bitor', 10n, 2n), 10n);
  assert.equal(call('bitxor', -10n, 2n), -12n);
  assert.equal(call('bitxor', 10n, 2n), 8n);
  assert.equal(call('bitxor', 1n, 1n), 0n);
  assert.equal(call('bitnot', 1n), -2n);
  assert.equal(call('bitnot', 10n), -11n);
  assert.equal(call('bitnot', -10n), 9n);
  assert.equal(call('bitand', 6.0, 3n), 2n);
  assert.equal(
    callError('bitand', -10.5, 2n),
    'call func bitand error: Expect int type for the first operand but got -10.5',
  );
  assert.equal(
    callError('bitor', 1n, 2.5),
    'call func bitor error: Expect int type for the second operand but got 2.5',
  );
});

test('conv between bases, signed and unsigned', () => {
  assert.equal(call('conv', 'a', 16n, 2n), '1010');
  assert.equal(call('conv', '6E', 18n, 8n), '172');
  assert.equal(call('conv', '-17', 10n, -18n), '-H');
  assert.equal(call('conv', '-17', 10n, 18n), '2D3FGB0B9CG4BD1H');
  assert.equal(call('conv', '18446744073709551615', -10n, 16n), '7FFFFFFFFFFFFFFF');
  assert.equal(call('conv', '  FF ', 16n, 10n), '255');
  assert.equal(call('conv', 'aa', 10n, 2n), '0');
  assert.equal(call('conv', 'a6a', 1n, 8n), null);
});

test('null arguments give null (pre-check N)', () => {
  assert.equal(call('abs', null), null);
  assert.equal(call('sqrt', undefined), null);
  assert.equal(call('power', 2n, null), null);
  assert.equal(call('bitand', null, 1n), null);
});

test('creation-time validation of math arguments', () => {
  assert.equal(
    validate('abs', lit.str('x')),
    'validate function abs error: Expect number - float or int type for parameter 1',
  );
  assert.equal(
    validate('abs', lit.boolExpr()),
    'validate function abs error: Expect number - float or int type for parameter 1',
  );
  assert.equal(
    validate('abs', lit.int(1n), lit.int(2n)),
    'validate function abs error: Expect 1 arguments but found 2.',
  );
  assert.equal(validate('abs', lit.field()), undefined);
  assert.equal(
    validate('bitand', lit.float(1.0), lit.int(1n)),
    'validate function bitand error: Expect int type for parameter 1',
  );
  assert.equal(
    validate('bitand', lit.int(1n), lit.str('a')),
    'validate function bitand error: Expect int type for parameter 2',
  );
  assert.equal(
    validate('log', lit.int(1n), lit.int(2n), lit.int(3n)),
    'validate function log error: Expect 1 or 2 arguments only',
  );
  assert.equal(
    validate('conv', lit.str('a'), lit.field(), lit.int(2n)),
    'validate function conv error: Expect int type for parameter 2',
  );
  assert.equal(validate('pi', lit.int(1n)), 'validate function pi error: Expect 0 arguments but found 1.');
  assert.equal(validate('ABS', lit.int(1n)), undefined);
  assert.equal(validate('nosuch', lit.int(1n)), 'function nosuch not found');
});
