/**
 * Bundle and ruleset texts that are not JSON are reported with Go's decoder wording, as eKuiper reports them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { goJsonSyntaxError } from '../../src/core/gojson.js';
import { startTestServer } from '../helpers/server.js';
import { call } from './helpers.js';

test("Go's syntax error texts for texts that are not JSON", () => {
  const cases: Array<[string, string | undefined]> = [
    ['', 'unexpected end of JSON input'],
    ['  ', 'unexpected end of JSON input'],
    ['{"streams": 12', 'unexpected end of JSON input'],
    ['"abc', 'unexpected end of JSON input'],
    ['1.', 'unexpected end of JSON input'],
    ['tru', 'unexpected end of JSON input'],
    ['{"streams": x}', "invalid character 'x' looking for beginning of value"],
    ['nojson', "invalid character 'o' in literal null (expecting 'u')"],
    ['{"a":1}}', "invalid character '}' after top-level value"],
    ['{a:1}', "invalid character 'a' looking for beginning of object key string"],
    ['{"a" 1}', "invalid character '1' after object key"],
    ['{"a":1 "b":2}', `invalid character '"' after object key:value pair`],
    ['[1 2]', "invalid character '2' after array element"],
    ['[1,]', "invalid character ']' looking for beginning of value"],
    ['{"a":1,}', "invalid character '}' looking for beginning of object key string"],
    ['{"a":"x\u0001"}', "invalid character '\\x01' in string literal"],
    ['{"a":"\\q"}', "invalid character 'q' in string escape code"],
    ["'a'", "invalid character '\\'' looking for beginning of value"],
    ['01', "invalid character '1' after top-level value"],
    ['-x', "invalid character 'x' in numeric literal"],
    ['1.e5', "invalid character 'e' after decimal point in numeric literal"],
    ['{"a": [1, {"b": null}], "c": -1.5e+3, "d": "\\u00e9\\n"}', undefined],
  ];
  for (const [text, want] of cases) assert.equal(goJsonSyntaxError(text), want, text);
});

test('import endpoints use the Go texts', async () => {
  const s = await startTestServer();
  try {
    const data = await call(s, 'POST', '/data/import', { content: '{"streams": x}' });
    assert.deepEqual(data.json(), {
      error: 1000,
      message: "configuration unmarshal with error invalid character 'x' looking for beginning of value",
    });
    const partial = await call(s, 'POST', '/data/import?partial=1', { content: '{"streams": 12' });
    assert.deepEqual(partial.json(), {
      error: 1000,
      message: 'configuration unmarshal with error unexpected end of JSON input',
    });
    const items = await call(s, 'POST', '/data/import?partial=1', {
      content: JSON.stringify({
        sourceConfig: { mqtt: '{x' },
        uploads: { u: '{x' },
        Schema: { protobuf_p: '{x' },
        scripts: { f: '{x' },
      }),
    });
    assert.equal(items.status, 400);
    const doc = JSON.parse(items.json().message);
    const go = "invalid character 'x' looking for beginning of object key string";
    assert.equal(doc.sourceConfig.mqtt, `invalid config: ${go}`);
    assert.equal(doc.uploads.u, `invalid upload record: ${go}`);
    assert.equal(doc.Schema.protobuf_p, `invalid schema record: ${go}`);
    assert.equal(doc.scripts.f, `fail to unmarshal the script f: ${go}`);
    const rs = await call(s, 'POST', '/ruleset/import', { content: 'nojson' });
    assert.deepEqual(rs.json(), {
      error: 1000,
      message: "Import ruleset error: invalid import file: invalid character 'o' in literal null (expecting 'u')",
    });
  } finally {
    await s.dispose();
  }
});

test("import request bodies decode like Go's stream decoder", async () => {
  const s = await startTestServer();
  try {
    const prefix = 'Invalid body: Error decoding json: ';
    const cases: Array<[string, string, string]> = [
      ['/data/import', '', `${prefix}EOF`],
      ['/data/import', '{"content":', `${prefix}unexpected EOF`],
      ['/data/import', 'zz', `${prefix}invalid character 'z' looking for beginning of value`],
      ['/data/import', '[1]', `${prefix}json: cannot unmarshal array into Go value of type server.configurationInfo`],
      [
        '/data/import',
        '{"content":{"streams":{}}}',
        `${prefix}json: cannot unmarshal object into Go struct field configurationInfo.content of type string`,
      ],
      [
        '/data/import?partial=1',
        '{"FILE":12}',
        `${prefix}json: cannot unmarshal number into Go struct field configurationInfo.file of type string`,
      ],
      [
        '/async/data/import',
        '{"content":true}',
        `${prefix}json: cannot unmarshal bool into Go struct field configurationInfo.content of type string`,
      ],
      [
        '/ruleset/import',
        '{"content":["x"]}',
        `${prefix}json: cannot unmarshal array into Go struct field rulesetInfo.content of type string`,
      ],
      ['/ruleset/import', '{"content":', `${prefix}unexpected EOF`],
      // nesting is bounded before any route reads the body (src/core/limits.ts)
      ['/data/import', '['.repeat(100000), 'Invalid body: exceeded max depth (JSON nesting is limited to 512 levels)'],
    ];
    for (const [path, body, message] of cases) {
      const r = await call(s, 'POST', path, body);
      assert.equal(r.status, 400, `${path} ${body.slice(0, 40)}`);
      assert.deepEqual(r.json(), { error: 1000, message }, `${path} ${body.slice(0, 40)}`);
    }
    // null is an empty body; what follows the first value is not read
    assert.deepEqual((await call(s, 'POST', '/data/import', 'null')).json(), {
      error: 1000,
      message: 'Invalid body: must specify content or file',
    });
    const trailing = await call(s, 'POST', '/data/import?partial=1', '{"content":"{}"} trailing');
    assert.equal(trailing.status, 200);
  } finally {
    await s.dispose();
  }
});
