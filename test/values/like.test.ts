import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EvalError, like, likeToRegExp } from '../../src/values/index.js';

test('% and _ are wildcards, matching is anchored and case-sensitive', () => {
  assert.equal(like('string1', 'str%'), true);
  assert.equal(like('another', 'an_ther'), true);
  assert.equal(like('string1', 'string1'), true);
  assert.equal(like('String1', 'str%'), false);
  assert.equal(like('xstring', 'str%'), false);
  assert.equal(like('中国', '_国'), true);
});

test('quirks: regex metacharacters are live, a backslash is literal and keeps the next wildcard literal', () => {
  assert.equal(like('v100', 'v1.0'), true);
  assert.equal(like('str\\_ng', 'str\\_ng'), true);
  assert.equal(like('str_ng', 'str\\_ng'), false);
  assert.equal(like('a\\%', 'a\\%'), true);
  assert.equal(like('a\\bc', 'a\\%'), false);
});

test('compiled patterns are cached; an uncompilable pattern and bad operands are errors', () => {
  assert.equal(likeToRegExp('ab%'), likeToRegExp('ab%'));
  assert.throws(
    () => likeToRegExp('a(b'),
    (e) => e instanceof EvalError && /invalid LIKE pattern/.test(e.message),
  );
  assert.throws(() => like(null, 'a'), /LIKE operator left operand expects string, but found <nil>/);
  assert.throws(() => like('a', 12n), /invalid LIKE pattern, must be a string but got 12/);
});
