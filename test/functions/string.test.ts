import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, callError, lit, validate } from './helpers.js';

test('concat uses text forms and skips nulls', () => {
  assert.equal(call('concat', 'mya', 'myb', 'myc'), 'myamybmyc');
  assert.equal(call('concat', '1', null, '2'), '12');
  assert.equal(call('concat', 'a', 1n, 1.5, true), 'a11.5true');
});

test('startswith/endswith (null → false), indexof in bytes (null → -1)', () => {
  assert.equal(call('endswith', 'mya', 'ya'), true);
  assert.equal(call('endswith', 'mya', 'myb'), false);
  assert.equal(call('endswith', null, 'a'), false);
  assert.equal(call('startswith', 'mya', 'my'), true);
  assert.equal(call('startswith', null, 'a'), false);
  assert.equal(call('indexof', 'mya', 'a'), 2n);
  assert.equal(call('indexof', 'mya', 'z'), -1n);
  assert.equal(call('indexof', null, 'a'), -1n);
  assert.equal(call('indexof', '中国a', 'a'), 6n);
});

test('length counts code points or elements; numbytes counts UTF-8 bytes; null → 0', () => {
  assert.equal(call('length', '中国'), 2n);
  assert.equal(call('length', 'myc'), 3n);
  assert.equal(call('length', null), 0n);
  assert.equal(call('length', [1n, 2n, 3n]), 3n);
  assert.equal(call('length', { a: 1n }), 1n);
  assert.equal(call('length', 12345n), 5n);
  assert.equal(call('numbytes', '中国'), 6n);
  assert.equal(call('numbytes', 'ya'), 2n);
});

test('case, trimming and padding', () => {
  assert.equal(call('lower', 'NYCNicks'), 'nycnicks');
  assert.equal(call('upper', 'NYCNicks'), 'NYCNICKS');
  assert.equal(call('lpad', 'NYCNicks', 2n), '  NYCNicks');
  assert.equal(call('rpad', 'NYCNicks', 3n), 'NYCNicks   ');
  assert.equal(call('ltrim', ' \ttrimme\n '), 'trimme\n ');
  assert.equal(call('rtrim', ' \ttrimme\n '), ' \ttrimme');
  assert.equal(call('trim', ' \ttrimme\n '), 'trimme');
  assert.equal(call('trim', '\u3000x\u00a0'), 'x');
  assert.equal(callError('lpad', 'a', 'x'), 'call func lpad error: cannot convert string(x) to int');
});

test('substring by byte offsets', () => {
  assert.equal(call('substring', 'NYCNicks', 3n), 'Nicks');
  assert.equal(call('substring', 'NYCNicks', 3n, 5n), 'Ni');
  assert.equal(call('substring', 'NYCNicks', 3n, 100n), 'Nicks');
  assert.equal(call('substring', 'NYCNicks', 88n, 100n), '');
  assert.equal(call('substring', '中国人', 3n, 6n), '国');
  assert.equal(callError('substring', 'abc', -1n), 'call func substring error: start index must be a positive number');
  assert.equal(
    callError('substring', 'abc', 2n, 1n),
    'call func substring error: start index must be smaller than end index',
  );
  assert.equal(callError('substring', 'abc', 1.5), 'call func substring error: cannot convert float64(1.5) to int');
  assert.equal(
    validate('substring', lit.str('a')),
    'validate function substring error: the arguments for substring should be 2 or 3',
  );
  assert.equal(
    validate('substring', lit.str('a'), lit.int(-1n)),
    'validate function substring error: The start index should not be a nagtive integer.',
  );
  assert.equal(
    validate('substring', lit.str('a'), lit.int(3n), lit.int(1n)),
    'validate function substring error: The end index should be larger than start index.',
  );
  assert.equal(
    validate('substring', lit.str('a'), lit.float(1.5)),
    'validate function substring error: Expect int type for parameter 2',
  );
});

test('split_value with negative index from a column and out-of-range errors', () => {
  assert.equal(call('split_value', 'a/b/c', '/', 0n), 'a');
  assert.equal(call('split_value', 'a/b/c', '/', -1n), 'c');
  assert.equal(call('split_value', '/test/device001/message', '/', 0n), '');
  assert.equal(call('split_value', '/test/device001/message', '/', 3n), 'message');
  assert.equal(
    callError('split_value', 'a/b/c', '/', 3n),
    'call func split_value error: 3 out of index array (size = 3)',
  );
  assert.equal(
    validate('split_value', lit.str('a'), lit.str('/'), lit.int(-1n)),
    'validate function split_value error: The index should not be a nagtive integer.',
  );
  assert.equal(
    validate('split_value', lit.str('a'), lit.int(1n), lit.int(1n)),
    'validate function split_value error: Expect string type for parameter 2',
  );
  assert.equal(
    validate('split_value', lit.str('a')),
    'validate function split_value error: the arguments for split_value should be 3',
  );
});

test('regular expressions (RE2 syntax)', () => {
  assert.equal(call('regexp_matches', 'seafood', 'foo.*'), true);
  assert.equal(call('regexp_matches', 'ya', 'foo.*'), false);
  assert.equal(call('regexp_matches', null, 'foo.*'), false);
  assert.equal(call('regexp_replace', '-ab-axxb-', 'a(x*)b', 'REP'), '-REP-REP-');
  assert.equal(call('regexp_replace', '-ab-axxb-', 'a(x*)b', '[$1]'), '-[]-[xx]-');
  assert.equal(call('regexp_replace', 'k=v', '(?P<key>\\w+)=(?P<val>\\w+)', '${val}=${key}'), 'v=k');
  assert.equal(call('regexp_substr', 'seafood', 'foo.*'), 'food');
  assert.equal(call('regexp_substr', 'seafood', 'xyz'), '');
  assert.match(callError('regexp_matches', 'a', '(b'), /^call func regexp_matches error: error parsing regexp/);
});

test('format rounds to decimals with optional locale symbols', () => {
  assert.equal(call('format', 12332.123456, 4n), '12332.1235');
  assert.equal(call('format', 12332.2, 0n), '12332');
  assert.equal(call('format', 12332.1, 4n), '12332.1000');
  assert.equal(call('format', 12332.2, 2n, 'en_US'), '12,332.20');
  assert.equal(call('format', 12332.2, 2n, 'de_DE'), '12.332,20');
  assert.equal(call('format', 12332.2, 2n, 'zh_CN'), '12,332.20');
  assert.equal(call('format', -123456.7899, 2n, 'de_CH'), '-123’456.79');
  assert.equal(call('format', 12332.2, 2n, 'fr_FR'), '12\u00a0332,20');
  assert.equal(
    callError('format', 98765.4321, 2n, 'ff'),
    'call func format error: not support for the specific locale:ff',
  );
  // locales whose symbols differ between the reference's CLDR data and the platform's
  assert.equal(
    call('format', 12332.12341111, 4n, 'ar_IN'),
    '\u0661\u0662\u066c\u0663\u0663\u0662\u066b\u0661\u0662\u0663\u0664',
  );
  assert.equal(call('format', 12332.2, 2n, 'no_NO'), '12,332.20');
  assert.equal(call('format', 12332.2, 2n, 'rm_CH'), '12’332.20');
  assert.equal(call('format', 12332.2, 2n, 'ar_EG'), '12,332.20');
  assert.equal(call('format', 12332.2, 0n, 'ar_DZ'), '12.332');
  assert.equal(call('format', 12332.2, 2n, 'it_CH'), '12’332.20');
  assert.equal(call('format', 12332.2, 2n, 'sv_SE'), '12\u00a0332,20');
  assert.equal(
    callError('format', 1.5, -1n),
    'call func format error: the decimal places must greater or equal than 0',
  );
  assert.equal(
    validate('format', lit.field(), lit.field()),
    'validate function format error: Expect integer type for parameter 2',
  );
  assert.equal(
    validate('format', lit.field(), lit.int(2n), lit.field()),
    'validate function format error: Expect string type for parameter 3',
  );
});

test('string argument validation rejects number and boolean literals', () => {
  assert.equal(validate('lower', lit.int(1n)), 'validate function lower error: Expect string type for parameter 1');
  assert.equal(
    validate('concat', lit.str('a'), lit.boolExpr()),
    'validate function concat error: Expect string type for parameter 2',
  );
  assert.equal(validate('concat'), 'validate function concat error: The arguments should be at least one.');
  assert.equal(validate('endswith', lit.field(), lit.str('a')), undefined);
});
