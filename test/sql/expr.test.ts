import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isBoolShaped, parseExpression, SqlSyntaxError } from '../../src/sql/index.js';
import { sexp } from './sexp.js';

const p = (sql: string): string => sexp(parseExpression(sql));

function rejects(sql: string, message: string | RegExp): void {
  assert.throws(
    () => parseExpression(sql),
    (e: unknown) => {
      assert.ok(e instanceof SqlSyntaxError, `expected SqlSyntaxError for ${sql}, got ${String(e)}`);
      if (typeof message === 'string') assert.equal(e.message, message, sql);
      else assert.match(e.message, message, sql);
      return true;
    },
  );
}

describe('literals', () => {
  test('integers are bigint, floats are numbers, in every written form', () => {
    const e = parseExpression('9223372036854775807');
    assert.equal(e.kind, 'integer');
    assert.equal(e.kind === 'integer' && e.value, 9223372036854775807n);
    assert.equal(p('5.'), '5f');
    assert.equal(p('.5'), '0.5f');
    assert.equal(p('2.25'), '2.25f');
    assert.equal(p('007'), '7');
  });

  test('negative literals where an operand is expected, with optional space', () => {
    assert.equal(p('-5'), '-5');
    assert.equal(p('- 5'), '-5');
    assert.equal(p('-2.5'), '-2.5f');
    assert.equal(p('-.5'), '-0.5f');
    assert.equal(p('a * -1'), '(* a -1)');
    assert.equal(p('a = -9223372036854775808'), '(= a -9223372036854775808)');
    assert.equal(p('arr[-1]'), '([] arr -1)');
  });

  test('a minus in binary position is subtraction', () => {
    assert.equal(p('a -1'), '(- a 1)');
    assert.equal(p('a-1'), '(- a 1)');
    assert.equal(p('3 - 1'), '(- 3 1)');
  });

  test('unary minus on anything but a number literal is rejected', () => {
    rejects('-a', 'found "-", expected expression.');
    rejects('-(a+1)', 'found "-", expected expression.');
    rejects('-abs(x)', 'found "-", expected expression.');
    rejects('1 + -a', 'found "-", expected expression.');
  });

  test('integers beyond int64 saturate (Go Atoi); malformed numbers are errors', () => {
    assert.equal(p('9223372036854775808'), '9223372036854775807');
    assert.equal(p('-99999999999999999999'), '-9223372036854775808');
    rejects('1.2.3', 'found "1.2.3", invalid number value.');
    rejects('a + .5.5', 'found ".5.5", invalid number value.');
  });

  test('a minus, optional spaces, a dot and digits is one negative number token', () => {
    assert.equal(p('-.5'), '-0.5f');
    assert.equal(p('- . 5'), '-0.5f');
    rejects('a - .5', 'found "-.5", expected EOF.');
    rejects('a-.5', 'found "-.5", expected EOF.');
    assert.equal(p('a -. b'), '(- a b)');
  });

  test('1e3 is the integer 1 followed by the identifier e3', () => {
    rejects('1e3', 'found "e3", expected EOF.');
  });

  test('strings in both quote styles with Go escapes', () => {
    assert.equal(p(`"it's"`), JSON.stringify("it's"));
    assert.equal(p(`'say "hi"'`), JSON.stringify('say "hi"'));
    assert.equal(p(`'a\\'b'`), JSON.stringify("a'b"));
    assert.equal(p(`"a\\"b"`), JSON.stringify('a"b'));
    assert.equal(p(`'a\\"b'`), JSON.stringify('a"b'));
    assert.equal(p(`"\\a\\b\\f\\n\\r\\t\\v\\\\"`), JSON.stringify('\x07\b\f\n\r\t\v\\'));
    assert.equal(p(`"\\x41\\101\\u00e9\\U0001F600"`), JSON.stringify('AAé😀'));
    assert.equal(p(`"\\\\d+"`), JSON.stringify('\\d+'));
  });

  test('invalid escapes are "invalid string" tokens the parser cannot accept', () => {
    rejects(`"\\d+"`, 'found "invalid string: \\"\\\\d+\\"", expected expression.');
    rejects(`'\\.'`, 'found "invalid string: \\"\\\\.\\"", expected expression.');
    rejects(`a = "\\1"`, /^found "invalid string: .*", expected expression\.$/);
    rejects(`"\\'"`, /^found "invalid string: /);
    rejects(`"\\x4"`, /^found "invalid string: /);
    rejects(`"\\ud800"`, /^found "invalid string: /);
    rejects(`"\\400"`, /^found "invalid string: /);
    rejects('"line\nbreak"', /^found "invalid string: /);
  });

  test('an unterminated string is reported with its text', () => {
    rejects(`"abc' + 1`, 'found "\\"abc\' + 1", expected expression.');
    rejects(`'abc`, 'found "\\"abc", expected expression.');
  });

  test('booleans in any case, time units as keywords', () => {
    assert.equal(p('TRUE'), 'true');
    assert.equal(p('false'), 'false');
    assert.equal(p('ss'), '#SS');
    assert.equal(p('Dd'), '#DD');
  });

  test('NULL, IS, OUTER, DISTINCT are plain identifiers', () => {
    assert.equal(p('NULL'), 'NULL');
    assert.equal(p('a = null'), '(= a null)');
    assert.equal(p('distinct'), 'distinct');
  });
});

describe('lexical quirks', () => {
  test('comments: block, line, and runs of stars', () => {
    assert.equal(p('a /* c */ + /*** x ***/ 1 -- tail'), '(+ a 1)');
    assert.equal(p('a -- comment\n + 1'), '(+ a 1)');
    rejects('a /* open', 'found "", expected EOF.');
  });

  test('"- -" starts a line comment and "/ *" a block comment', () => {
    assert.equal(p('a - -1'), 'a');
    assert.equal(p('a - - 1'), 'a');
    assert.equal(p('a - -1\n+ 2'), '(+ a 2)');
    assert.equal(p('a - (-1)'), '(- a (paren -1))');
    rejects('a / *b*/ 2', 'found "2", expected EOF.');
    assert.equal(p('a / b'), '(/ a b)');
  });

  test('two-character operators tolerate inner whitespace', () => {
    assert.equal(p('a ! = 1'), '(!= a 1)');
    assert.equal(p('a < = 1'), '(<= a 1)');
    assert.equal(p('a > = 1'), '(>= a 1)');
    assert.equal(p('a - > b'), '(-> a b)');
  });

  test('a lone ! is =', () => {
    assert.equal(p('a ! 1'), '(= a 1)');
  });

  test('<> is not an operator', () => {
    rejects('a <> 1', 'found ">", expected expression.');
  });

  test('no ==, no ||, no prefix NOT, no IS NULL', () => {
    rejects('a == 1', 'found "=", expected expression.');
    rejects('a || b', 'found "|", expected expression.');
    rejects('NOT a', 'found "NOT", expected expression.');
    rejects('a AND NOT b', 'found "NOT", expected expression.');
    rejects('a IS NULL', 'found "IS", expected EOF.');
  });

  test('identifiers: plain, backquoted (any text, never a keyword), unterminated backquote', () => {
    assert.equal(p('`my field`'), 'my field');
    assert.equal(p('`select` + `温度`'), '(+ select 温度)');
    assert.equal(p('`a-b'), 'a-b');
    assert.equal(p('Abc_1'), 'Abc_1');
  });

  test('illegal characters (reported with an empty literal) and reserved words are not operands', () => {
    rejects('_a', 'found "", expected expression.');
    rejects('$a', 'found "", expected expression.');
    rejects('温度', 'found "", expected expression.');
    rejects('a + from', 'found "FROM", expected expression.');
    rejects('end', 'found "END", expected expression.');
    rejects('', 'found "EOF", expected expression.');
  });

  test('errors carry line and column', () => {
    try {
      parseExpression('a +\n  $');
      assert.fail('should throw');
    } catch (e) {
      assert.ok(e instanceof SqlSyntaxError);
      assert.equal(e.line, 2);
      assert.equal(e.column, 3);
    }
  });
});

describe('precedence', () => {
  test('levels: OR < AND < comparison < additive < multiplicative', () => {
    assert.equal(p('a OR b AND c'), '(OR a (AND b c))');
    assert.equal(p('a = 1 AND b > 2 OR c'), '(OR (AND (= a 1) (> b 2)) c)');
    assert.equal(p('a + b * c'), '(+ a (* b c))');
    assert.equal(p('a * b + c'), '(+ (* a b) c)');
    assert.equal(p('a < b + 1'), '(< a (+ b 1))');
  });

  test('all binary operators are left-associative; comparisons chain', () => {
    assert.equal(p('a - b - c'), '(- (- a b) c)');
    assert.equal(p('a / b / c'), '(/ (/ a b) c)');
    assert.equal(p('a = b = c'), '(= (= a b) c)');
    assert.equal(p('a OR b OR c'), '(OR (OR a b) c)');
  });

  test('& is multiplicative, | and ^ additive', () => {
    assert.equal(p('a | b & c'), '(| a (& b c))');
    assert.equal(p('a = 1 | 2'), '(= a (| 1 2))');
    assert.equal(p('a ^ b % c'), '(^ a (% b c))');
  });

  test('[] and -> are at the multiplicative level (quirk)', () => {
    assert.equal(p('2 * arr[0]'), '([] (* 2 arr) 0)');
    assert.equal(p('a / b->c'), '(-> (/ a b) c)');
    assert.equal(p('x + arr[0]'), '(+ x ([] arr 0))');
    assert.equal(p('2 * (arr[0])'), '(* 2 (paren ([] arr 0)))');
  });

  test('parentheses are kept', () => {
    assert.equal(p('(a + b) * c'), '(* (paren (+ a b)) c)');
    assert.equal(p('((a))'), '(paren (paren a))');
  });
});

describe('navigation and subscripts', () => {
  test('qualified references, dot and arrow navigation', () => {
    assert.equal(p('s.c'), 's.c');
    assert.equal(p('a.b.c'), '(. a.b c)');
    assert.equal(p('a->b->c'), '(-> (-> a b) c)');
    assert.equal(p('a->b.c'), '(. (-> a b) c)');
    assert.equal(p('payload->`fav.movie`'), '(-> payload fav.movie)');
    assert.equal(p('f(x).a'), '(. (f x) a)');
  });

  test('index, slices with optional bounds, whole-array forms', () => {
    assert.equal(p('arr[1]'), '([] arr 1)');
    assert.equal(p('arr[1:3]'), '([:] arr 1 3)');
    assert.equal(p('arr[:3]'), '([:] arr _ 3)');
    assert.equal(p('arr[1:]'), '([:] arr 1 _)');
    assert.equal(p('arr[:]'), '([:] arr _ _)');
    assert.equal(p('arr[]'), '([] arr)');
    assert.equal(p('arr[x+1:y]'), '([:] arr (+ x 1) y)');
    assert.equal(p('all[poi[-1] + 1]->ts'), '(-> ([] all (+ ([] poi -1) 1)) ts)');
    assert.equal(p('a->b[0:1]'), '([:] (-> a b) 0 1)');
  });

  test('malformed subscripts and navigation', () => {
    rejects('arr[1', 'Unexpected token "1". when parsing bracket expressions.');
    rejects('arr[-1 b]', 'Unexpected token "-1". when parsing bracket expressions.');
    rejects('arr[1:2:3]', 'Found ":", expected right bracket.');
    rejects('arr[)]', 'The start index ) is invalid in bracket expression.');
    rejects('arr[1:)]', 'The end index ) is invalid in bracket expression.');
    rejects('a->1', 'found "1", expected expression.');
    rejects('a->ss', 'found "SS", expected expression.');
    rejects('[0]', 'found "[", expected expression.');
  });

  test('extension: an index starting with a literal may continue with an expression', () => {
    assert.equal(p('arr[1 + i]'), '([] arr (+ 1 i))');
    assert.equal(p('arr[0:n - 1]'), '([:] arr 0 (- n 1))');
  });
});

describe('IN, BETWEEN, LIKE', () => {
  test('IN with a list or an operand, NOT IN', () => {
    assert.equal(p('a IN (1, 2, "x")'), '(in a [1 2 "x"])');
    assert.equal(p('a IN (arr)'), '(in a [arr])');
    assert.equal(p('a NOT IN arr'), '(notin a arr)');
    assert.equal(p('a IN b->c'), '(in a (-> b c))');
    assert.equal(p('a + 1 IN (2) AND b'), '(AND (in (+ a 1) [2]) b)');
  });

  test('BETWEEN takes single operands', () => {
    assert.equal(p('a BETWEEN 1 AND 5'), '(between a 1 5)');
    assert.equal(p('a NOT BETWEEN -1 AND b'), '(notbetween a -1 b)');
    assert.equal(p('a BETWEEN (1+1) AND f(x) AND c'), '(AND (between a (paren (+ 1 1)) (f x)) c)');
    assert.equal(p('a BETWEEN s.lo AND s.hi OR d'), '(OR (between a s.lo s.hi) d)');
    rejects('a BETWEEN 1+1 AND 5', 'expect AND expression after between but found +');
    rejects('a BETWEEN 1 AND 5 + 1', 'found "+", operator not allowed after BETWEEN expression.');
    rejects('a BETWEEN 1 OR 5', 'expect AND expression after between but found OR');
    rejects('a BETWEEN 1 b', 'expect AND expression after between but found IDENT');
  });

  test('LIKE and NOT LIKE take a single operand', () => {
    assert.equal(p('a LIKE "x%"'), '(like a "x%")');
    assert.equal(p('a NOT LIKE b AND c'), '(AND (notlike a b) c)');
    assert.equal(p('a LIKE f(x) OR c'), '(OR (like a (f x)) c)');
    rejects('a LIKE "x" + b', 'found "+", operator not allowed after LIKE expression.');
  });

  test('IN errors', () => {
    rejects('a IN ()', 'expect elements for IN expression, but found ")", expected expression.');
    rejects('a IN (1, 2', 'expect ) for IN expression, but got "EOF"');
    rejects('a IN )', 'expect expression after IN, but got error found ")", expected expression.');
    rejects('a IN (1) + 1', 'found "+", operator not allowed after IN expression.');
  });

  test('NOT must be followed by IN, BETWEEN or LIKE', () => {
    rejects('a NOT = 1', 'found "=", expected expression');
  });
});

describe('CASE', () => {
  test('simple and searched forms, optional ELSE', () => {
    assert.equal(
      p('CASE a WHEN 1 THEN "x" WHEN 2 THEN "y" ELSE "z" END'),
      '(case a (when 1 "x") (when 2 "y") (else "z"))',
    );
    assert.equal(p('case when a > 1 then b end'), '(case _ (when (> a 1) b))');
  });

  test('a later ELSE replaces an earlier one; WHEN may follow ELSE', () => {
    assert.equal(p('CASE a WHEN 1 THEN 2 ELSE 3 WHEN 4 THEN 5 ELSE 6 END'), '(case a (when 1 2) (when 4 5) (else 6))');
  });

  test('CASE errors', () => {
    rejects('CASE a ELSE 1 END', 'invalid CASE expression, WHEN expected before ELSE');
    rejects('CASE a END', 'invalid CASE expression, WHEN expected before END');
    rejects('CASE WHEN a > 1 THEN b', 'invalid CASE expression, END expected');
    rejects('CASE WHEN a > 1 b END', 'invalid CASE expression, THEN expected after WHEN');
  });

  test('a searched CASE needs bool-shaped conditions (parenthesised ones are an Eddy extension)', () => {
    rejects('CASE WHEN 30 THEN "high" END', 'invalid CASE expression, WHEN expression must be a bool condition');
    rejects('CASE WHEN isNull(a) THEN 1 END', 'invalid CASE expression, WHEN expression must be a bool condition');
    assert.equal(p('CASE WHEN (a > 1) THEN 1 END'), '(case _ (when (paren (> a 1)) 1))');
    assert.equal(p('CASE WHEN isNull(a) = true THEN 1 END'), '(case _ (when (= (isNull a) true) 1))');
    assert.equal(p('CASE x WHEN 30 THEN 1 END'), '(case x (when 30 1))');
  });
});

describe('wildcards', () => {
  test('*, s.*, EXCEPT and REPLACE in either order', () => {
    assert.equal(p('*'), '*');
    assert.equal(p('s.*'), 's.*');
    assert.equal(p('* EXCEPT(a, b)'), '(* except[a b])');
    assert.equal(p('* REPLACE(a + 1 AS a, "x" AS k)'), '(* replace[(+ a 1) as a, "x" as k])');
    assert.equal(p('* REPLACE(1 AS b) EXCEPT(a)'), '(* except[a] replace[1 as b])');
  });

  test('lenient forms the reference accepts: empty EXCEPT, REPLACE without alias, repeated clauses', () => {
    assert.equal(p('* EXCEPT()'), '*');
    assert.equal(p('* EXCEPT(a,,b,)'), '(* except[a b])');
    assert.equal(p('* REPLACE(a)'), '(* replace[a as a])');
    assert.equal(p('* EXCEPT(a) EXCEPT(b)'), '(* except[b])');
  });

  test('malformed EXCEPT / REPLACE', () => {
    rejects('* EXCEPT a', 'Found "a" after EXCEPT, expect left parentheses.');
    rejects('* EXCEPT(1)', 'Found "1" in EXCEPT');
    rejects('* REPLACE a', 'Found "a" after REPLACE, expect left parentheses.');
    rejects('* REPLACE(a AS b c)', 'Found "c" in REPLACE');
    rejects('* REPLACE(* AS b)', 'alias is not supported for *');
  });
});

describe('calls', () => {
  test('name as written, arguments including *', () => {
    assert.equal(p('COUNT(*)'), '(COUNT *)');
    assert.equal(p('now()'), '(now)');
    assert.equal(p('to_json(* EXCEPT(a))'), '(to_json (* except[a]))');
    assert.equal(p('`abs`(a)'), '(abs a)');
    assert.equal(p('f(a, g(b, 1), "s")'), '(f a (g b 1) "s")');
  });

  test('OVER with PARTITION BY, ORDER BY and WHEN', () => {
    assert.equal(p('lag(a) OVER (PARTITION BY b, c WHEN d > 1)'), '(lag a) over(partition[b c] when (> d 1))');
    assert.equal(p('row_number() OVER (ORDER BY a DESC, b ASC)'), '(row_number) over(order[a desc b])');
    assert.equal(p('acc_sum(a) OVER (WHEN color = "red")'), '(acc_sum a) over(when (= color "red"))');
  });

  test('empty or malformed OVER', () => {
    rejects('lag(a) OVER ()', 'Found ")" after OVER (, expect partition by or when.');
    rejects('lag(a) OVER (WHEN a > 1', 'Found "EOF", expect right parentheses after OVER');
    rejects('lag(a) OVER a', 'Found "IDENT" after OVER, expect parentheses.');
    rejects('lag(a) OVER (PARTITION a)', 'found "a", expected by after partition.');
    rejects('row_number() OVER (ORDER a)', 'found "a", expected BY keyword.');
  });

  test('argument lists: a trailing comma is accepted, anything else is an error', () => {
    assert.equal(p('f(a,)'), '(f a)');
    rejects('f(a', 'found function call "f", expected ), but with "EOF".');
    rejects('Concat(a b)', 'found function call "concat", expected ), but with "b".');
    rejects('f(,)', 'found ",", expected expression.');
  });

  test('meta() and mqtt()', () => {
    assert.equal(p('meta(topic)'), '(meta topic)');
    assert.equal(p('META(s.topic)'), '(meta s.topic)');
    assert.equal(p('meta(k->sub)'), '(meta (-> k sub))');
    assert.equal(p('meta(k.sub.x)'), '(meta (. k.sub x))');
    assert.equal(p('meta(*)'), '(meta *)');
    assert.equal(p('mqtt(topic)'), '(mqtt topic)');
    assert.equal(p('MQTT(messageId)'), '(mqtt messageId)');
    rejects('meta(1)', 'found "1", expected meta key.');
    rejects('meta(a + 1)', 'found "a", expected meta key.');
    rejects('meta(* EXCEPT(a))', '"EXCEPT" is not supported in meta function');
    rejects('meta(a, b)', 'found function call "meta", expected ), but with ",".');
    rejects('mqtt(qos)', 'found "qos", expected topic or messageid.');
  });
});

describe('depth limit', () => {
  test('absurdly deep nesting is a syntax error, not a stack overflow', () => {
    rejects('('.repeat(5000) + 'a' + ')'.repeat(5000), /nested too deeply/);
    rejects(Array(3000).fill('a').join(' + '), /nested too deeply/);
    assert.equal(parseExpression(Array(300).fill('a = 1').join(' OR ')).kind, 'binary');
  });
});

describe('isBoolShaped', () => {
  test('literals and comparison/logical/IN/BETWEEN/LIKE tops are bool-shaped; calls and arithmetic are not', () => {
    const yes = [
      'true',
      'a = 1',
      'a != b',
      'a < 1 OR b',
      'a AND b',
      'a IN (1)',
      'a NOT BETWEEN 1 AND 2',
      'a LIKE "x"',
      '(a > 1)',
    ];
    const no = ['isNull(a)', 'a', '1', 'a + 1', 'a & 1', '"true"', 'CASE WHEN a > 1 THEN true END'];
    for (const s of yes) assert.equal(isBoolShaped(parseExpression(s)), true, s);
    for (const s of no) assert.equal(isBoolShaped(parseExpression(s)), false, s);
  });
});
