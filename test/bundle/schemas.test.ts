import { tmpdir } from 'node:os';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startTestServer } from '../helpers/server.js';

const PERSON = 'syntax = "proto3";\nmessage Person {\n  string name = 1;\n  int32 id = 2;\n}\n';

test('protobuf schema create, list, describe, update, delete', async () => {
  const s = await startTestServer();
  try {
    const dir = join(s.homeDir, 'data', 'schemas', 'protobuf');
    const created = await s.req('POST', '/schemas/protobuf', { name: 'people', content: PERSON });
    assert.equal(created.status, 201);
    assert.equal(created.text, 'protobuf schema people is created');
    assert.equal(readFileSync(join(dir, 'people.proto'), 'utf8'), PERSON);

    assert.equal((await s.req('POST', '/schemas/protobuf', { name: 'another', content: PERSON })).status, 201);
    assert.deepEqual((await s.req('GET', '/schemas/protobuf')).json(), ['another', 'people']);
    assert.deepEqual((await s.req('GET', '/schemas/protobuf/people')).json(), {
      type: 'protobuf',
      name: 'people',
      content: PERSON,
      file: join(dir, 'people.proto'),
      soFile: '',
    });

    const dup = await s.req('POST', '/schemas/protobuf', { name: 'people', content: PERSON });
    assert.equal(dup.status, 400);
    assert.deepEqual(dup.json(), {
      error: 1000,
      message: 'schema create command error: schema protobuf.people already registered',
    });

    const v2 = PERSON.replace('}', '  string email = 3;\n}');
    const upd = await s.req('PUT', '/schemas/protobuf/people', { name: 'people', content: v2 });
    assert.equal(upd.status, 200);
    assert.equal(upd.text, 'protobuf schema people is updated');
    assert.equal((await s.req('GET', '/schemas/protobuf/people')).json() instanceof Object, true);
    assert.equal(((await s.req('GET', '/schemas/protobuf/people')).json() as { content: string }).content, v2);

    // PUT is an upsert
    assert.equal((await s.req('PUT', '/schemas/protobuf/fresh', { content: PERSON })).status, 200);
    assert.ok(existsSync(join(dir, 'fresh.proto')));

    // every create and update path records the schema for export (docs/compatibility.md D14)
    const exported = (await s.req('GET', '/data/export')).json() as { Schema: Record<string, string> };
    assert.deepEqual(Object.keys(exported.Schema).sort(), ['protobuf_another', 'protobuf_fresh', 'protobuf_people']);
    assert.deepEqual(JSON.parse(exported.Schema.protobuf_people), {
      type: 'protobuf',
      name: 'people',
      content: v2,
      file: '',
      soFile: '',
    });

    const del = await s.req('DELETE', '/schemas/protobuf/people');
    assert.equal(del.status, 200);
    assert.equal(del.text, 'protobuf schema people is deleted');
    assert.equal(existsSync(join(dir, 'people.proto')), false);
    assert.deepEqual((await s.req('GET', '/schemas/protobuf')).json(), ['another', 'fresh']);
    const afterDelete = (await s.req('GET', '/data/export')).json() as { Schema: Record<string, string> };
    assert.equal(afterDelete.Schema.protobuf_people, undefined);

    const gone = await s.req('GET', '/schemas/protobuf/people');
    assert.equal(gone.status, 404);
    assert.deepEqual(gone.json(), { error: 1002, message: 'schema type protobuf, file people not found' });
    const delGone = await s.req('DELETE', '/schemas/protobuf/people');
    assert.equal(delGone.status, 404);
    assert.deepEqual(delGone.json(), {
      error: 1002,
      message: 'delete protobuf schema people error: schema protobuf.people not found',
    });
  } finally {
    await s.dispose();
  }
});

test('schemas survive a restart: the registry is rebuilt from the stored files', async () => {
  const s = await startTestServer();
  const home = s.homeDir;
  await s.req('POST', '/schemas/protobuf', { name: 'kept', content: PERSON });
  await s.stop();
  const again = await startTestServer({ home });
  try {
    assert.deepEqual((await again.req('GET', '/schemas/protobuf')).json(), ['kept']);
    assert.equal(((await again.req('GET', '/schemas/protobuf/kept')).json() as { content: string }).content, PERSON);
  } finally {
    await again.dispose();
  }
});

test('schema from a file URL; imports resolve against the schema folder', async () => {
  const s = await startTestServer();
  try {
    const src = join(s.homeDir, 'reading.proto');
    writeFileSync(src, 'syntax = "proto3";\nimport "units.proto";\nmessage Reading { double v = 1; Unit unit = 2; }\n');
    assert.equal(
      (
        await s.req('POST', '/schemas/protobuf', {
          name: 'units',
          content: 'syntax = "proto3";\nenum Unit { C = 0; F = 1; }\n',
        })
      ).status,
      201,
    );
    const r = await s.req('POST', '/schemas/protobuf', { name: 'reading', file: pathToFileURL(src).href });
    assert.equal(r.status, 201, r.text);
    const d = (await s.req('GET', '/schemas/protobuf/reading')).json() as { content: string; file: string };
    assert.equal(d.content, readFileSync(src, 'utf8'));
    assert.equal(d.file, join(s.homeDir, 'data', 'schemas', 'protobuf', 'reading.proto'));
  } finally {
    await s.dispose();
  }
});

test('bad schema requests answer 400 and leave no file behind', async () => {
  const s = await startTestServer();
  try {
    const dir = join(s.homeDir, 'data', 'schemas', 'protobuf');
    const cases: Array<[unknown, string]> = [
      [{ content: PERSON }, 'Invalid body: name is required'],
      [
        { name: 'x', content: PERSON, file: 'file:///tmp/x.proto' },
        'Invalid body: cannot specify both content and file',
      ],
      [{ name: 'x' }, 'Invalid body: must specify content or file'],
    ];
    for (const [body, message] of cases) {
      const r = await s.req('POST', '/schemas/protobuf', body);
      assert.equal(r.status, 400);
      assert.deepEqual(r.json(), { error: 1000, message });
    }
    const traversal = await s.req('POST', '/schemas/protobuf', { name: '../evil', content: PERSON });
    assert.equal(traversal.status, 400);
    assert.match((traversal.json() as { message: string }).message, /^Invalid body: invalid name/);

    const download = await s.req('POST', '/schemas/protobuf', {
      name: 'dl',
      file: `file://${tmpdir()}/nonexistent/eddy.proto`,
    });
    assert.equal(download.status, 400);
    assert.deepEqual(download.json(), {
      error: 1000,
      message: `schema create command error: stat ${tmpdir()}/nonexistent/eddy.proto: no such file or directory`,
    });

    const badJson = await s.req('POST', '/schemas/protobuf', '{"name": ');
    assert.equal(badJson.status, 400);
    assert.match((badJson.json() as { message: string }).message, /^Invalid body: Error decoding schema json: /);

    const mismatch = await s.req('PUT', '/schemas/protobuf/a', { name: 'b', content: PERSON });
    assert.deepEqual(mismatch.json(), { error: 1000, message: 'Invalid body: Type or name does not match' });

    const unknownType = await s.req('GET', '/schemas/avro');
    assert.equal(unknownType.status, 400);
    assert.deepEqual(unknownType.json(), { error: 1000, message: 'schema type avro not found' });
    assert.equal((await s.req('POST', '/schemas/avro', { name: 'x', content: PERSON })).status, 400);

    assert.deepEqual(readdirSync(dir), []);
    assert.deepEqual((await s.req('GET', '/schemas/protobuf')).json(), []);
  } finally {
    await s.dispose();
  }
});

test('schema content is not parsed at registration: a proto may import one registered later; a broken one fails its rules', async () => {
  const s = await startTestServer();
  try {
    // registered before the proto it imports, as a bundle may list them
    const outer = 'syntax = "proto3";\nimport "inner_dep.proto";\nmessage Outer { Inner inner = 1; int64 id = 2; }\n';
    assert.equal((await s.req('POST', '/schemas/protobuf', { name: 'outer_dep', content: outer })).status, 201);
    assert.equal(
      (
        await s.req('POST', '/schemas/protobuf', {
          name: 'inner_dep',
          content: 'syntax = "proto3";\nmessage Inner { string v = 1; }\n',
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: 'CREATE STREAM sdep () WITH (DATASOURCE="t/dep", FORMAT="protobuf", SCHEMAID="outer_dep.Outer")',
        })
      ).status,
      201,
    );
    assert.equal(
      (await s.req('POST', '/rules', { id: 'rdep', sql: 'SELECT id FROM sdep', actions: [{ log: {} }] })).status,
      201,
    );

    const broken = await s.req('POST', '/schemas/protobuf', { name: 'broken', content: 'message { nope' });
    assert.equal(broken.status, 201);
    assert.equal(broken.text, 'protobuf schema broken is created');
    assert.equal(
      ((await s.req('GET', '/schemas/protobuf/broken')).json() as { content: string }).content,
      'message { nope',
    );
    const missingType = await s.req('POST', '/schemas/protobuf', {
      name: 'm',
      content: 'syntax = "proto3"; message A { Nope n = 1; }',
    });
    assert.equal(missingType.status, 201);

    await s.req('POST', '/streams', {
      sql: 'CREATE STREAM sbroken () WITH (DATASOURCE="t/b", FORMAT="protobuf", SCHEMAID="broken.A")',
    });
    const rule = await s.req('POST', '/rules', { id: 'rbroken', sql: 'SELECT * FROM sbroken', actions: [{ log: {} }] });
    assert.equal(rule.status, 400);
    assert.match((rule.json() as { message: string }).message, /broken/);
  } finally {
    await s.dispose();
  }
});

test('the custom schema type (format plugins): empty at first, a Go .so refused with the plugin error, unknown names 404', async () => {
  const s = await startTestServer();
  try {
    assert.deepEqual((await s.req('GET', '/schemas/custom')).json(), []);
    const create = await s.req('POST', '/schemas/custom', { name: 'c1', soFile: 'file:///tmp/c1.so' });
    assert.equal(create.status, 400);
    // a custom schema is a format plugin archive (docs/rest-api.md §9): a Go shared library is not one
    assert.match((create.json() as { message: string }).message, /^schema create command error: /);
    assert.equal((await s.req('PUT', '/schemas/custom/c1', { soFile: 'file:///tmp/c1.so' })).status, 400);
    assert.deepEqual((await s.req('GET', '/schemas/custom')).json(), []);
    assert.deepEqual((await s.req('GET', '/schemas/custom/c1')).json(), {
      error: 1002,
      message: 'schema type custom, file c1 not found',
    });
    assert.deepEqual((await s.req('DELETE', '/schemas/custom/c1')).json(), {
      error: 1002,
      message: 'delete custom schema c1 error: schema custom.c1 not found',
    });
    assert.deepEqual((await s.req('GET', '/schemas/other')).json(), {
      error: 1000,
      message: 'schema type other not found',
    });
  } finally {
    await s.dispose();
  }
});
