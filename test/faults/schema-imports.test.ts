/**
 * Protobuf schema imports stay inside the schema folders (README "Input limits and file access"): a schema that
 * imports a file elsewhere is refused with a 400 that does not quote the file, at registration and, for a schema file
 * put into the folder by hand, when a rule uses it, without reading the file. The files outside are named pipes with
 * no writer: reading one would block the server, so a refusal that answers proves the file was not opened.
 * Eddy runs as a child process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startEddyProcess, type EddyProcess } from '../helpers/eddy-process.js';

/** A request that gives up after 30 s (a server blocked on a pipe never answers). */
async function ask(
  eddy: EddyProcess,
  method: string,
  path: string,
  body: unknown,
): Promise<{ status: number; text: string }> {
  const res = await fetch(eddy.url + path, {
    method,
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, text: await res.text() };
}

const proto = (imp: string) => `syntax = "proto3";\nimport "${imp}";\nmessage A { string a = 1; }\n`;

test('schema imports outside the schema folders are refused without being read, at registration and at use', async () => {
  const home = mkdtempSync(join(tmpdir(), 'eddy-faults-'));
  const outside = mkdtempSync(join(tmpdir(), 'eddy-outside-'));
  const pipe = join(outside, 'secret.proto');
  execFileSync('mkfifo', [pipe]);
  const eddy = await startEddyProcess(home);
  try {
    // registration: absolute paths and paths climbing out are refused, whatever they name
    const targets = ['/etc/passwd', '/etc/shadow', '/proc/self/environ', pipe, '../../../../../../../../etc/passwd'];
    for (const [i, target] of targets.entries()) {
      const r = await ask(eddy, 'POST', '/schemas/protobuf', { name: `evil${i}`, content: proto(target) });
      assert.equal(r.status, 400, `${target}: ${r.text}`);
      assert.match(r.text, /is refused: a schema may import only files inside the schema folders/, r.text);
      assert.doesNotMatch(r.text, /root|illegal token/, r.text);
      assert.equal((await ask(eddy, 'GET', `/schemas/protobuf/evil${i}`, undefined)).status, 404);
    }
    // a schema file put into the folder by hand, and a symbolic link in the folder leading out
    const dir = join(home, 'data', 'schemas', 'protobuf');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'byhand.proto'), proto(pipe));
    symlinkSync(pipe, join(dir, 'link.proto'));
    writeFileSync(join(dir, 'vialink.proto'), proto('link.proto'));
    writeFileSync(join(dir, 'passwd.proto'), proto('/etc/passwd'));
    for (const schema of ['byhand', 'vialink', 'passwd']) {
      let r = await ask(eddy, 'POST', '/streams', {
        sql: `CREATE STREAM pb_${schema} () WITH (DATASOURCE="x/${schema}", FORMAT="protobuf", SCHEMAID="${schema}.A")`,
      });
      assert.equal(r.status, 201, r.text);
      r = await ask(eddy, 'POST', '/rules', {
        id: `r_${schema}`,
        sql: `SELECT * FROM pb_${schema}`,
        actions: [{ log: {} }],
      });
      assert.equal(r.status, 400, `${schema}: ${r.text}`);
      assert.match(r.text, /is refused: a schema may import only files inside the schema folders/, r.text);
      assert.doesNotMatch(r.text, /root|illegal token/, r.text);
    }
    // imports inside the folder still work
    let r = await ask(eddy, 'POST', '/schemas/protobuf', {
      name: 'base',
      content: 'syntax = "proto3";\nmessage B { int64 b = 1; }\n',
    });
    assert.equal(r.status, 201, r.text);
    r = await ask(eddy, 'POST', '/schemas/protobuf', {
      name: 'uses',
      content: 'syntax = "proto3";\nimport "base.proto";\nmessage U { B b = 1; string c = 2; }\n',
    });
    assert.equal(r.status, 201, r.text);
    r = await ask(eddy, 'POST', '/streams', {
      sql: 'CREATE STREAM pb_uses () WITH (DATASOURCE="x/uses", FORMAT="protobuf", SCHEMAID="uses.U")',
    });
    assert.equal(r.status, 201, r.text);
    r = await ask(eddy, 'POST', '/rules', { id: 'r_uses', sql: 'SELECT * FROM pb_uses', actions: [{ log: {} }] });
    assert.equal(r.status, 201, r.text);
  } finally {
    await eddy.kill9();
    rmSync(home, { recursive: true, force: true });
    rmSync(outside, { recursive: true, force: true });
  }
});
