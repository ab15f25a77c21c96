import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileTemplate, renderTemplate, TemplateError } from '../../src/template/index.js';
import { DateTime } from '../../src/values/value.js';

const run = (text: string, data: unknown = {}): string => compileTemplate(text).execute(data);
const rows = [
  { room: 'a', temp: 31.5 },
  { room: 'b', temp: 29 },
];

test('docs/runtime.md §3.4 examples: per-row template, json, index, range, missing key', () => {
  assert.equal(run('{"r":"{{.room}}","t":{{.temp}}}', rows[0]), '{"r":"a","t":31.5}');
  assert.equal(run('{"r":"{{.room}}","t":{{.temp}}}', rows[1]), '{"r":"b","t":29}');
  assert.equal(run('{{json .}}', rows), '[{"room":"a","temp":31.5},{"room":"b","temp":29}]');
  assert.equal(run('{{index . 1 "room"}}', rows), 'b');
  assert.equal(run('{{range .}}{{.room}};{{end}}', rows), 'a;b;');
  assert.equal(run('{{.missing}}', rows[0]), '<no value>');
});

test('Go value printing: ints, floats in %v form, maps sorted, lists, nil', () => {
  assert.equal(run('{{.}}', { b: 2n, a: 1n }), 'map[a:1 b:2]');
  assert.equal(run('{{.}}', [1n, 2n, 3n]), '[1 2 3]');
  assert.equal(run('{{.x}}', { x: 1e6 }), '1e+06');
  assert.equal(run('{{.x}}', { x: 100000 }), '100000');
  assert.equal(run('{{.x}}', { x: 1234567 }), '1.234567e+06');
  assert.equal(run('{{.x}}', { x: 0.0001 }), '0.0001');
  assert.equal(run('{{.x}}', { x: 0.00001 }), '1e-05');
  assert.equal(run('{{.x}}', { x: 20 }), '20');
  assert.equal(run('{{.x}}', { x: 12345678901234567890n }), '12345678901234567890');
  assert.equal(run('{{.x}}', { x: true }), 'true');
  // a key holding null prints <no value> at top level, <nil> nested
  assert.equal(run('{{.x}}', { x: null }), '<no value>');
  assert.equal(run('{{.}}', { x: null, y: [null, 'a'] }), 'map[x:<nil> y:[<nil> a]]');
  assert.equal(run('{{print .missing}}', {}), '<nil>');
  assert.equal(run('{{.a.b}}', {}), '<no value>');
  assert.equal(
    run('{{.t}}', { t: new DateTime(Date.UTC(2024, 0, 2, 3, 4, 5), 'UTC') }),
    '2024-01-02 03:04:05 +0000 UTC',
  );
  assert.equal(run('{{.b}}', { b: new Uint8Array([1, 2]) }), '[1 2]');
  assert.equal(run("{{ 1e6 }} {{ 1.5 }} {{ 0x10 }} {{ -3 }} {{ 'a' }}"), '1e+06 1.5 16 -3 97');
});

test('trim markers, comments, raw and escaped strings', () => {
  assert.equal(run('a  {{- 1 -}}  b'), 'a1b');
  // the documentation's example
  assert.equal(run('{{23 -}} < {{- 45}}'), '23<45');
  assert.equal(run('a {{- /* note */ -}} b'), 'ab');
  assert.equal(run('a{{/* multi\nline */}}b'), 'ab');
  assert.equal(run('{{`raw\\n`}}|{{"tab\\tq\\"x\\u00e9"}}'), 'raw\\n|tab\tq"xé');
  assert.equal(run('{{"\\x41\\101\\U0001F600"}}|{{printf "%c" \'\\\'\'}}'), "AA\u{1F600}|'");
  // a dash without a space is a negative number, not a trim marker
  assert.equal(run('{{-3}}'), '-3');
});

test('if / else if / else, with, and/or/not, comparisons', () => {
  const t = '{{if eq .a 1}}one{{else if eq .a 2}}two{{else}}other{{end}}';
  assert.equal(run(t, { a: 1n }), 'one');
  assert.equal(run(t, { a: 2n }), 'two');
  assert.equal(run(t, { a: 3n }), 'other');
  assert.equal(run('{{with .x}}[{{.}}]{{else}}none{{end}}', { x: 'v' }), '[v]');
  assert.equal(run('{{with .x}}[{{.}}]{{else}}none{{end}}', {}), 'none');
  assert.equal(run('{{if .x}}t{{else}}f{{end}}', { x: 0 }), 'f');
  assert.equal(run('{{if .x}}t{{else}}f{{end}}', { x: '' }), 'f');
  assert.equal(run('{{if .x}}t{{else}}f{{end}}', { x: [] }), 'f');
  assert.equal(run('{{and 1 0 2}} {{or 0 "" "x"}} {{not .m}} {{and .m 1}}', {}), '0 x true <no value>');
  assert.equal(
    run('{{eq .s "a" "b"}} {{ne 1 2}} {{lt 1 2}} {{le 2 2}} {{gt "b" "a"}} {{ge 1.5 2.5}}', { s: 'b' }),
    'true true true true true false',
  );
  assert.equal(run('{{eq .missing "x"}}'), 'false');
  // Go compares a float with an int constant as an error
  assert.throws(() => run('{{eq .a 1}}', { a: 1 }), /error calling eq: incompatible types for comparison/);
  assert.equal(run('{{eq .a 1.0}}', { a: 1 }), 'true');
});

test('range over lists and maps (sorted keys), variables, else, break/continue', () => {
  assert.equal(run('{{range $i, $v := .}}{{$i}}:{{$v.room}} {{end}}', rows), '0:a 1:b ');
  assert.equal(run('{{range $k, $v := .}}{{$k}}={{$v}};{{end}}', { z: 1n, a: 'x', m: 2.5 }), 'a=x;m=2.5;z=1;');
  assert.equal(run('{{range $v := .}}{{$v}}{{end}}', ['p', 'q']), 'pq');
  assert.equal(run('{{range .}}x{{else}}empty{{end}}', []), 'empty');
  assert.equal(run('{{range .none}}x{{else}}empty{{end}}', {}), 'empty');
  assert.equal(
    run('{{range .}}{{if eq . 2}}{{continue}}{{end}}{{if eq . 4}}{{break}}{{end}}{{.}}{{end}}', [1n, 2n, 3n, 4n, 5n]),
    '13',
  );
  assert.equal(run('{{$x := 1}}{{range .}}{{$x = .}}{{end}}{{$x}}', [5n, 6n]), '6');
  assert.equal(run('{{range .l}}{{$.top}}{{end}}', { top: 'T', l: [1n, 2n] }), 'TT');
  assert.equal(run('{{$r := .}}{{range .l}}{{$r.n}}{{.}}{{end}}', { n: '#', l: ['a', 'b'] }), '#a#b');
});

test('pipelines, parentheses, define/template/block', () => {
  assert.equal(run('{{.name | upper | printf "%s!"}}', { name: 'bob' }), 'BOB!');
  assert.equal(run('{{printf "%d-%d" (len .l) (index .l 0)}}', { l: [7n, 8n] }), '2-7');
  assert.equal(run('{{(index . 0).room}}', rows), 'a');
  assert.equal(run('{{define "T"}}<{{.}}>{{end}}{{template "T" .a}}{{template "T"}}', { a: 1n }), '<1><<no value>>');
  assert.equal(run('{{block "B" .b}}[{{.}}]{{end}}', { b: 'z' }), '[z]');
});

test('the pipeline examples of the text/template documentation all print "output" quoted', () => {
  const examples = [
    '{{"\\"output\\""}}',
    '{{`"output"`}}',
    '{{printf "%q" "output"}}',
    '{{"output" | printf "%q"}}',
    '{{printf "%q" (print "out" "put")}}',
    '{{"put" | printf "%s%s" "out" | printf "%q"}}',
    '{{"output" | printf "%s" | printf "%q"}}',
    '{{with "output"}}{{printf "%q" .}}{{end}}',
    '{{with $x := "output" | printf "%q"}}{{$x}}{{end}}',
    '{{with $x := "output"}}{{printf "%q" $x}}{{end}}',
    '{{with $x := "output"}}{{$x | printf "%q"}}{{end}}',
  ];
  for (const e of examples) assert.equal(run(e), '"output"', e);
});

test('printf verbs, flags, width and precision as Go formats them', () => {
  const cases: Array<[string, unknown[], string]> = [
    ['%d', [42n], '42'],
    ['%5d|%-5d|%05d', [42n, 42n, 42n], '   42|42   |00042'],
    ['%+d %x %X %o %b %#x', [5n, 255n, 255n, 8n, 5n, 255n], '+5 ff FF 10 101 0xff'],
    ['%.2f', [3.14159], '3.14'],
    ['%8.3f|%-8.1f|', [3.14159, 2.25], '   3.142|2.2     |'],
    ['%.0f %.0f %.1f', [0.5, 1.5, 0.25], '0 2 0.2'],
    ['%e %E', [1234.5678, 0.000123], '1.234568e+03 1.230000E-04'],
    ['%g %g %g %.3g', [1e6, 100000, 1e-5, 3.14159], '1e+06 100000 1e-05 3.14'],
    ['%v %v %v', [1.0, 1e21, 123456789.0], '1 1e+21 1.23456789e+08'],
    ['%s %q %v', ['hi', 'a"b\n', 'x'], 'hi "a\\"b\\n" x'],
    ['%x %X', ['hi', 'hi'], '6869 6869'],
    ['%t %v', [true, false], 'true false'],
    ['%c %U', [65n, 65n], 'A U+0041'],
    ['%5s|%-5s|%.2s', ['ab', 'ab', 'abc'], '   ab|ab   |ab'],
    ['%T %T %T %T', [1n, 1.5, 'a', [1n]], 'int64 float64 string []interface {}'],
    ['%d', ['x'], '%!d(string=x)'],
    ['%s', [5n], '%!s(int64=5)'],
    ['%d %d', [1n], '1 %!d(MISSING)'],
    ['%d', [1n, 2n], '1%!(EXTRA int64=2)'],
    ['100%%', [], '100%'],
    ['%v', [{ b: 1n, a: [1.5, 'x'] }], 'map[a:[1.5 x] b:1]'],
    ['%d', [[1n, 2n]], '[1 2]'],
    ['%[2]d %[1]d', [1n, 2n], '2 1'],
    ['%*d', [5n, 1n], '    1'],
    ['%v', [null], '<nil>'],
  ];
  for (const [format, args, want] of cases) {
    const data: Record<string, unknown> = {};
    args.forEach((a, i) => (data['a' + i] = a));
    const argText = args.map((_, i) => ' .a' + i).join('');
    assert.equal(run(`{{printf ${JSON.stringify(format)}${argText}}}`, data), want, format);
  }
  assert.equal(run('{{print 1 2 "a" "b" 3}}'), '1 2ab3');
  assert.equal(run('{{println 1 "a"}}'), '1 a\n');
});

test('html, js and urlquery escape as Go does', () => {
  assert.equal(run('{{html .}}', `<a href="x">'&'</a>`), '&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  assert.equal(run('{{js .}}', `it's "q" <b>=`), 'it\\\'s \\"q\\" \\u003Cb\\u003E\\u003D');
  assert.equal(run('{{urlquery .}}', 'a b&c=d/é'), 'a+b%26c%3Dd%2F%C3%A9');
  assert.equal(run('{{html .missing}}', {}), '&lt;no value&gt;');
});

test('json and base64 (eKuiper functions) follow Go encoding rules', () => {
  assert.equal(
    run('{{json .}}', { b: 1n, a: '<&>', c: 1e21, d: 1e-7, e: 2.5, f: [true, null] }),
    '{"a":"\\u003c\\u0026\\u003e","b":1,"c":1e+21,"d":1e-7,"e":2.5,"f":[true,null]}',
  );
  assert.equal(run('{{json .}}', { x: 100000000 }), '{"x":100000000}');
  assert.equal(run('{{toRawJson .}}', { a: '<b>' }), '{"a":"<b>"}');
  assert.equal(run('{{toPrettyJson .}}', { a: [1n], b: {} }), '{\n  "a": [\n    1\n  ],\n  "b": {}\n}');
  assert.equal(
    run('{{base64 .s}} {{base64 .n}} {{base64 .f}} {{base64 .m}}', { s: 'hello', n: 12n, f: 1.5, m: { a: 1n } }),
    'aGVsbG8= MTI= MS41 eyJhIjoxfQ==',
  );
  assert.equal(run('{{ (fromJson "{\\"a\\":[1,2]}").a }}'), '[1 2]');
});

test('sprig strings, numbers, defaults, lists and dicts', () => {
  assert.equal(
    run('{{upper "ab"}} {{lower "AB"}} {{title "hello world"}} {{trim "  x "}} {{repeat 3 "ab"}}'),
    'AB ab Hello World x ababab',
  );
  assert.equal(
    run('{{substr 1 3 "hello"}} {{trunc 3 "hello"}} {{trunc -2 "hello"}} {{abbrev 5 "hello world"}}'),
    'el hel lo he...',
  );
  assert.equal(
    run(
      '{{replace "a" "b" "banana"}} {{contains "an" "banana"}} {{hasPrefix "ba" "banana"}} {{trimSuffix "na" "banana"}}',
    ),
    'bbnbnb true true bana',
  );
  assert.equal(
    run('{{snakecase "FirstName"}} {{kebabcase "FirstName"}} {{camelcase "http_server"}} {{initials "First Try"}}'),
    'first_name first-name HttpServer FT',
  );
  assert.equal(
    run('{{quote "a" 1}} {{squote "a"}} {{cat "a" 1 nil "b"}} {{nospace "a b c"}} {{indent 2 "a\\nb"}}'),
    '"a" "1" \'a\' a 1 b abc   a\n  b',
  );
  assert.equal(
    run(
      '{{join "," (splitList "-" "a-b-c")}} {{(split "$" "a$b")._1}} {{sortAlpha (list "b" "a")}} {{plural "one" "many" 2}}',
    ),
    'a,b,c b [a b] many',
  );
  assert.equal(
    run('{{add 1 2 3}} {{sub 5 2}} {{mul 2 3 4}} {{div 7 2}} {{mod 7 2}} {{add1 1}} {{max 1 5 3}} {{min 4 2}}'),
    '6 3 24 3 1 2 5 2',
  );
  assert.equal(
    run('{{addf 0.1 0.2}} {{subf 1 0.9}} {{mulf 1.1 3}} {{divf 1 3}} {{floor 1.5}} {{ceil 1.2}} {{round 2.555 2}}'),
    '0.3 0.1 3.3 0.3333333333333333 1 2 2.56',
  );
  assert.equal(
    run('{{int "42"}} {{float64 "1.5"}} {{atoi "7"}} {{seq 3}} {{until 3}} {{toDecimal "0777"}}'),
    '42 1.5 7 1 2 3 [0 1 2] 511',
  );
  assert.equal(
    run('{{default "d" .x}} {{default "d" "v"}} {{empty .x}} {{coalesce .x "" "c"}} {{ternary "y" "n" true}}'),
    'd v true c y',
  );
  assert.equal(
    run('{{list 1 "a" 2.5}} {{first .l}} {{last .l}} {{rest .l}} {{initial .l}} {{reverse .l}} {{uniq (list 1 1 2)}}', {
      l: [1n, 2n, 3n],
    }),
    '[1 a 2.5] 1 3 [2 3] [1 2] [3 2 1] [1 2]',
  );
  assert.equal(
    run(
      '{{has 2 .l}} {{without .l 2}} {{append .l 4}} {{prepend .l 0}} {{concat .l (list 9)}} {{slice .l 1 2}} {{chunk 2 .l}}',
      { l: [1n, 2n, 3n] },
    ),
    'true [1 3] [1 2 3 4] [0 1 2 3] [1 2 3 9] [2] [[1 2] [3]]',
  );
  assert.equal(
    run(
      '{{$d := dict "a" 1 "b" "x"}}{{$d}} {{get $d "a"}} {{hasKey $d "b"}} {{pick $d "a"}} {{omit $d "a"}} {{set $d "c" 3}}',
    ),
    'map[a:1 b:x] 1 true map[a:1] map[b:x] map[a:1 b:x c:3]',
  );
  assert.equal(run('{{dig "a" "b" "def" .}} {{dig "a" "z" "def" .}}', { a: { b: 'v' } }), 'v def');
  assert.equal(
    run('{{typeOf .f}} {{typeOf .s}} {{kindOf .m}} {{kindIs "slice" .l}} {{deepEqual .l .l}}', {
      f: 1.5,
      s: 'x',
      m: {},
      l: [],
    }),
    'float64 string map true true',
  );
  assert.equal(
    run('{{kindOf .i}} {{kindOf .f}} {{kindOf .s}} {{kindOf .b}} {{kindOf .t}} {{kindOf .y}} {{kindOf .n}}', {
      i: 1n,
      f: 1.5,
      s: 'x',
      b: true,
      t: new DateTime(0, 'UTC'),
      y: new Uint8Array([1]),
      n: null,
    }),
    'int64 float64 string bool struct slice invalid',
  );
  assert.equal(
    run('{{b64enc "hi"}} {{b64dec "aGk="}} {{b32enc "hi"}} {{b32dec "NBUQ===="}} {{sha1sum "a"}} {{adler32sum "a"}}'),
    'aGk= hi NBUQ==== hi 86f7e437faa5a7fce15d1ddcb9eaeaea377667b8 6422626',
  );
  assert.equal(
    run(
      '{{regexMatch "^[a-z]+$" "abc"}} {{regexFind "[0-9]+" "ab12cd34"}} {{regexFindAll "[0-9]" "a1b2c3" 2}} {{regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W"}} {{regexSplit "," "a,b,c" -1}}',
    ),
    'true 12 [1 2] -W-xxW- [a b c]',
  );
  assert.equal(
    run('{{base "/a/b.txt"}} {{dir "/a/b.txt"}} {{ext "b.tar.gz"}} {{clean "/a/../b/"}} {{isAbs "/x"}}'),
    'b.txt /a .gz /b true',
  );
  assert.equal(
    run('{{(urlParse "http://u:p@h:80/p?q=1#f").host}} {{urlJoin (dict "scheme" "http" "host" "h" "path" "/x")}}'),
    'h:80 http://h/x',
  );
});

test('sprig dates use Go layouts', () => {
  const t = new DateTime(Date.UTC(2024, 2, 5, 14, 7, 9, 120), 'UTC');
  assert.equal(run('{{dateInZone "2006-01-02 15:04:05.000 MST" .t "UTC"}}', { t }), '2024-03-05 14:07:09.120 UTC');
  assert.equal(run('{{dateInZone "Jan 2, 2006 3:04PM" .t "Asia/Shanghai"}}', { t }), 'Mar 5, 2024 10:07PM');
  assert.equal(run('{{(toDate "2006-01-02" "2024-03-05").Year}}'), '2024');
  assert.equal(
    run('{{unixEpoch .t}} {{.t.Unix}} {{.t.Format "2006/01/02"}}', { t }),
    '1709647629 1709647629 2024/03/05',
  );
  assert.equal(
    run('{{(dateModify "1.5h" .t).Format "15:04"}} {{(dateModify "-10m" .t).Format "15:04"}}', { t }),
    '15:37 13:57',
  );
  assert.equal(run('{{duration 95}} {{duration 3600}} {{durationRound "2h10m"}}'), '1m35s 1h0m0s 2h');
  assert.match(run('{{now | date "2006"}}'), /^\d{4}$/);
});

test('compile errors are clear and name the template', () => {
  const bad: Array<[string, RegExp]> = [
    ['{{.a', /^template: sink:1: unclosed action/],
    ['{{foo 1}}', /^template: sink:1: function "foo" not defined/],
    ['{{bcrypt "x"}}', /^template: sink:1: function "bcrypt" is not supported by Eddy/],
    ['{{if .a}}x', /^template: sink:1: unexpected EOF/],
    ['x\n{{end}}', /^template: sink:2: unexpected \{\{end\}\}/],
    ['{{$x}}', /undefined variable "\$x"/],
    ['{{"abc}}', /unterminated quoted string/],
    ['{{.a | 1}}', /non executable command in pipeline stage 2/],
    ['{{/* open', /unclosed comment/],
    ['{{}}', /missing value for command/],
    // escapes Go's strconv.Unquote rejects in a double-quoted string (the same unquoting as SQL strings)
    ['{{"it\\\'s"}}', /^template: sink:1: invalid syntax/],
    ['{{"\\ud800"}}', /^template: sink:1: invalid syntax/],
    ['{{"\\400"}}', /^template: sink:1: invalid syntax/],
  ];
  for (const [t, re] of bad) {
    assert.throws(
      () => compileTemplate(t),
      (e: unknown) => e instanceof TemplateError && re.test(e.message),
      t,
    );
  }
});

test('runtime errors name the failing action', () => {
  assert.throws(
    () => run('{{.a.b}}', { a: null }),
    /executing "sink" at <\.a\.b>: nil pointer evaluating interface \{\}\.b/,
  );
  assert.throws(() => run('{{.room}}', rows), /can't evaluate field room in type \[\]map\[string\]interface \{\}/);
  assert.throws(() => run('{{.a.b}}', { a: 'x' }), /can't evaluate field b in type interface \{\}/);
  assert.throws(() => run('{{index .a 5}}', { a: [1n] }), /error calling index: index out of range: 5/);
  assert.throws(() => run('{{upper .a}}', { a: 1 }), /wrong type for value; expected string; got float64/);
  assert.throws(() => run('{{len 3}}'), /error calling len: len of type int64/);
  assert.throws(() => run('{{fail "boom"}}'), /error calling fail: boom/);
  // sprig's slice replaces Go's builtin and only takes lists
  assert.throws(
    () => run('{{slice "abc" 1 2}}'),
    /error calling slice: list should be type of slice or array but string/,
  );
  assert.throws(() => run('{{slice .l 1 5}}', { l: [1n] }), /error calling slice: reflect: slice index out of range/);
  assert.throws(() => run('{{template "nope"}}'), /no such template "nope"/);
  // endless recursion and absurd nesting end in a template error, not a crash
  assert.throws(
    () => run('{{define "a"}}x{{template "a" .}}{{end}}{{template "a" .}}'),
    (e: unknown) => e instanceof TemplateError && /exceeded maximum template depth/.test(e.message),
  );
  assert.throws(
    () => compileTemplate('{{' + '('.repeat(20000) + '1' + ')'.repeat(20000) + '}}'),
    (e: unknown) => e instanceof TemplateError && /max expression depth exceeded/.test(e.message),
  );
});

test('compiled templates are cached by text and renderTemplate passes plain text through', () => {
  assert.equal(compileTemplate('a/{{.room}}'), compileTemplate('a/{{.room}}'));
  assert.equal(renderTemplate('plain/topic', rows[0]), 'plain/topic');
  assert.equal(renderTemplate('a/{{.room}}', rows[0]), 'a/a');
  // one template, many executions with independent variable state
  const t = compileTemplate('{{$n := .room}}{{$n}}');
  assert.equal(t.execute(rows[0]) + t.execute(rows[1]), 'ab');
});

test('template regex functions run on RE2 with Go semantics: linear time, Go splits and empty matches', () => {
  const evil = `${'a'.repeat(34)}!`;
  assert.equal(run('{{regexMatch "(a+)+$" .s}}', { s: evil }), 'false');
  assert.equal(run('{{regexReplaceAll "a*" "baaac" "-"}} {{regexReplaceAllLiteral "a(x)" "ax" "$1"}}'), '-b-c- $1');
  assert.equal(run('{{regexFindAll "a*" "baaac" -1}}'), '[ aaa ]');
  assert.equal(
    run('{{regexSplit "a*" "baaac" -1}} {{regexSplit "," "a,b,c" 2}} {{regexSplit "x" "" -1}}'),
    '[b c] [a b,c] []',
  );
  assert.equal(run('{{regexMatch "^[[:alpha:]]+$" "abc"}} {{regexFind "(?U)a+" "aaa"}}'), 'true a');
  assert.throws(
    () => run('{{mustRegexMatch "(?=a)" "a"}}'),
    /error parsing regexp: invalid or unsupported Perl syntax: `\(\?=`/,
  );
});
