/**
 * SQL regular expressions on RE2 (src/functions/regex.ts, src/values/like.ts): linear time on patterns that make
 * backtracking engines explode, RE2 syntax and semantics for every function that takes a pattern, and Go's error texts
 * for what RE2 refuses.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { call, callError } from './helpers.js';
import { like } from '../../src/values/index.js';
import { startTestServer } from '../helpers/server.js';

const EVIL = `${'a'.repeat(34)}!`;

test('catastrophic-backtracking patterns finish with the right answer', () => {
  assert.equal(call('regexp_matches', EVIL, '(a+)+$'), false);
  assert.equal(call('regexp_matches', `${EVIL}`.replace('!', ''), '(a+)+$'), true);
  assert.equal(call('regexp_substr', `${'a'.repeat(5000)}!`, '(a|aa)+$'), '');
  assert.equal(call('regexp_replace', `${'a'.repeat(5000)}!`, '(a*)*b', 'x'), `${'a'.repeat(5000)}!`);
  assert.equal(call('regexp_matches', `${'x'.repeat(40)}y`, '(x+x+)+z'), false);
  assert.equal(like(`${'a'.repeat(40)}!`, '%a%a%a%a%a%a%a%a%a%a%b'), false);
});

test('regexp_matches: RE2 syntax (flags, \\z, \\Q…\\E, POSIX and Unicode classes)', () => {
  assert.equal(call('regexp_matches', 'Hello', '(?i)^hello$'), true);
  assert.equal(call('regexp_matches', 'a\nb', '(?s)a.b'), true);
  assert.equal(call('regexp_matches', 'a\nb', 'a.b'), false);
  assert.equal(call('regexp_matches', 'x\n', 'x\\z'), false);
  assert.equal(call('regexp_matches', 'a.b', '^\\Qa.b\\E$'), true);
  assert.equal(call('regexp_matches', 'axb', '^\\Qa.b\\E$'), false);
  assert.equal(call('regexp_matches', 'abc', '^[[:alpha:]]+$'), true);
  assert.equal(call('regexp_matches', 'αβγ', '^\\p{Greek}+$'), true);
  assert.equal(call('regexp_matches', 'x1', '^\\pL\\pN$'), true);
  // multi-line mode: ^ and $ at line boundaries
  assert.equal(call('regexp_matches', 'a\nb', '(?m)^b$'), true);
  assert.equal(call('regexp_matches', 'a\nb', '^b$'), false);
});

test('regexp_substr: leftmost-first alternation, non-greedy flag, code points', () => {
  assert.equal(call('regexp_substr', 'ab', 'a|ab'), 'a');
  assert.equal(call('regexp_substr', 'aaa', '(?U)a+'), 'a');
  assert.equal(call('regexp_substr', 'ab123c45', '[[:digit:]]+'), '123');
  assert.equal(call('regexp_substr', 'x😀y', 'x.y'), 'x😀y');
  assert.equal(call('regexp_substr', 'seafood', 'foo.*'), 'food');
});

test('regexp_replace: Go expansion and Go empty-match rules', () => {
  assert.equal(call('regexp_replace', '-ab-axxb-', 'a(x*)b', 'REP'), '-REP-REP-');
  assert.equal(call('regexp_replace', '-ab-axxb-', 'a(x*)b', '${1}W'), '-W-xxW-');
  // `$1W` names the group `1W`, which does not exist: nothing (Go's Expand)
  assert.equal(call('regexp_replace', '-ab-axxb-', 'a(x*)b', '$1W'), '---');
  assert.equal(call('regexp_replace', 'k=v', '(?P<key>\\w+)=(?P<val>\\w+)', '$val=$key'), 'v=k');
  assert.equal(call('regexp_replace', 'k=v', '(?<key>\\w+)=(?<val>\\w+)', '${val}=${key}'), 'v=k');
  assert.equal(call('regexp_replace', 'a', 'a', '$$'), '$');
  // an empty match right after a match is skipped (JavaScript would give -b--c-)
  assert.equal(call('regexp_replace', 'baaac', 'a*', '-'), '-b-c-');
  assert.equal(call('regexp_replace', 'abc', 'x*', '-'), '-a-b-c-');
  assert.equal(call('regexp_replace', '😀a😀', 'a', '-'), '😀-😀');
});

test('patterns RE2 refuses fail with Go regexp error texts', () => {
  const cases: Array<[string, string]> = [
    ['(?=a)', 'invalid or unsupported Perl syntax: `(?=`'],
    ['(?!a)', 'invalid or unsupported Perl syntax: `(?!`'],
    ['(?<=a)b', 'invalid named capture: `(?<=a)b`'],
    ['(a)\\1', 'invalid escape sequence: `\\1`'],
    ['a**', 'invalid nested repetition operator: `**`'],
    ['(b', 'missing closing ): `(b`'],
    ['x{1001}', 'invalid repeat count: `{1001}`'],
  ];
  for (const [pattern, text] of cases) {
    for (const fn of ['regexp_matches', 'regexp_substr']) {
      assert.equal(
        callError(fn, 'abc', pattern),
        `call func ${fn} error: error parsing regexp: ${text}`,
        `${fn} ${pattern}`,
      );
    }
    assert.equal(
      callError('regexp_replace', 'abc', pattern, 'x'),
      `call func regexp_replace error: error parsing regexp: ${text}`,
    );
  }
});

test('LIKE runs on RE2 with eKuiper quirks kept', () => {
  assert.equal(like('string1', 'str%'), true);
  assert.equal(like('another', 'an_ther'), true);
  assert.equal(like('v100', 'v1.0'), true, 'metacharacters are not escaped');
  assert.equal(like('ab\ncd', 'ab%'), false, '% does not cross a newline');
  assert.equal(like('😀', '_'), true, '_ is one code point');
  assert.throws(() => like('x', 'a(?=b)%'), /invalid LIKE pattern/);
});

test('json_path_query filters with =~ use RE2', () => {
  const doc = { items: [{ n: 'Alpha' }, { n: 'beta' }] };
  assert.deepEqual(call('json_path_query', doc, '$.items[? @.n =~ "(?i)^alpha$"].n'), ['Alpha']);
});

test('the ReDoS pattern in a rule over a live stream gives its result, and the server keeps serving', async () => {
  const s = await startTestServer();
  try {
    assert.equal(
      (await s.req('POST', '/streams', { sql: 'CREATE STREAM rx () WITH (DATASOURCE="rx/in", TYPE="memory")' })).status,
      201,
    );
    const r = await s.req('POST', '/rules', {
      id: 'rx',
      sql: 'SELECT regexp_matches(a, "(a+)+$") AS m FROM rx',
      actions: [{ memory: { topic: 'rx/out' } }],
    });
    assert.equal(r.status, 201, r.text);
    const out: unknown[] = [];
    const stop = s.app.connectors.memory.subscribe('rx/out', (msg) => out.push(msg.row));
    try {
      const deadline = Date.now() + 20_000;
      while (out.length === 0 && Date.now() < deadline) {
        s.app.connectors.memory.publish({ topic: 'rx/in', row: { a: EVIL } });
        assert.equal((await s.req('GET', '/ping')).status, 200);
        await new Promise((res) => setTimeout(res, 50));
      }
      assert.deepEqual(out[0], { m: false });
    } finally {
      stop();
    }
  } finally {
    await s.dispose();
  }
});
