/**
 * External services on a real server: `/services` management with eKuiper's texts and statuses, archive checks
 * (descriptor, zip-slip, `schema/` folder), persistence across a restart, and service functions called from SQL rules
 * against a real REST service and a real gRPC service (run in a worker thread by the test).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../helpers/server.js';
import type { ValueObject } from '../../src/values/index.js';
import { ArchiveDir, HELLO_PROTO, startServices, type Services } from './services-fixture.js';

type J = Record<string, any>;

let counter = 0;
const uid = (p: string) => `${p}_${process.pid}_${Date.now().toString(36)}_${counter++}`;

let svc: Services;
let zips: ArchiveDir;

before(async () => {
  svc = await startServices();
  zips = new ArchiveDir();
});

after(async () => {
  await svc.stop();
  zips.dispose();
});

function restDef(extra: J = {}): J {
  return {
    about: { author: { name: 'Ops' }, description: { en_US: 'greetings' } },
    interfaces: {
      greeter: {
        address: svc.restUrl,
        protocol: 'rest',
        schemaType: 'protobuf',
        schemaFile: 'hello.proto',
        functions: [{ name: 'greet', serviceName: 'SayHello' }],
        options: { headers: { 'X-Key': 'abc' } },
      },
      free: {
        address: `${svc.restUrl}/api`,
        protocol: 'rest',
        schemaless: true,
        options: { headers: { 'X-Key': 'k1' } },
      },
      ...extra,
    },
  };
}

function archive(name: string, def: J, schemaFolder = 'schemas'): string {
  return zips.zip({ [`${name}.json`]: JSON.stringify(def), [`${schemaFolder}/hello.proto`]: HELLO_PROTO });
}

async function until<T>(fn: () => T | Promise<T>, ok: (v: T) => boolean, what: string, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last = await fn();
  while (!ok(last)) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
    last = await fn();
  }
  return last;
}

/** Runs `SELECT <select> FROM <memory stream>` and returns the first output row for input `row`. */
async function runOnce(s: TestServer, select: string, row: ValueObject): Promise<ValueObject> {
  const name = uid('st');
  let r = await s.req('POST', '/streams', {
    sql: `CREATE STREAM ${name} () WITH (DATASOURCE="${name}/in", FORMAT="json", TYPE="memory")`,
  });
  assert.equal(r.status, 201, r.text);
  const out: ValueObject[] = [];
  const close = s.app.connectors.memory.subscribe(`${name}/out`, (m) => out.push(m.row));
  const id = uid('rule');
  try {
    r = await s.req('POST', '/rules', {
      id,
      sql: `SELECT ${select} FROM ${name}`,
      actions: [{ memory: { topic: `${name}/out` } }],
    });
    assert.equal(r.status, 201, r.text);
    // publish until the rule's source has subscribed and the first result comes back
    await until(
      () => {
        if (out.length === 0) s.app.connectors.memory.publish({ topic: `${name}/in`, row });
        return out.length;
      },
      (n) => n > 0,
      `a result of ${select}`,
    );
    return out[0];
  } finally {
    close();
    await s.req('DELETE', `/rules/${id}`);
  }
}

function err(r: { status: number; json(): unknown }, status: number): J {
  assert.equal(r.status, status);
  return r.json() as J;
}

test('create, list, describe, functions, update and delete with eKuiper texts', async () => {
  const s = await startTestServer();
  try {
    const name = uid('vision');
    let r = await s.req('GET', '/services');
    assert.deepEqual(r.json(), []);
    r = await s.req('POST', '/services', { name, file: archive(name, restDef()) });
    assert.equal(r.status, 201, r.text);
    assert.equal(r.text, `service ${name} is created`);
    assert.deepEqual((await s.req('GET', '/services')).json(), [name]);

    r = await s.req('GET', `/services/${name}`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.json(), {
      About: { author: { name: 'Ops' }, description: { en_US: 'greetings' } },
      Interfaces: {
        greeter: {
          Desc: null,
          Addr: svc.restUrl,
          Protocol: 'rest',
          Schema: { SchemaType: 'protobuf', SchemaFile: 'hello.proto', Schemaless: false },
          Functions: ['greet', 'Echo', 'Upper', 'Fail'],
          Options: { headers: { 'X-Key': 'abc' } },
        },
        free: {
          Desc: null,
          Addr: `${svc.restUrl}/api`,
          Protocol: 'rest',
          Schema: { SchemaType: '', SchemaFile: '', Schemaless: true },
          Functions: ['free'],
          Options: { headers: { 'X-Key': 'k1' } },
        },
      },
    });

    assert.deepEqual((await s.req('GET', '/services/functions')).json(), ['Echo', 'Fail', 'Upper', 'free', 'greet']);
    r = await s.req('GET', '/services/functions/greet');
    assert.deepEqual(r.json(), {
      name: 'greet',
      serviceName: name,
      FuncName: 'greet',
      ServiceName: name,
      InterfaceName: 'greeter',
      Addr: svc.restUrl,
      MethodName: 'SayHello',
    });
    // the archive's files are kept under data/services
    assert.ok(existsSync(join(s.homeDir, 'data', 'services', `${name}.json`)));
    assert.ok(existsSync(join(s.homeDir, 'data', 'services', 'schemas', 'hello.proto')));

    // update: the path name is used; the new definition drops the schemaless interface
    const def2 = restDef();
    delete def2.interfaces.free;
    r = await s.req('PUT', `/services/${name}`, { name: 'ignored', file: archive(name, def2) });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, `service ${name} is updated`);
    assert.deepEqual((await s.req('GET', '/services/functions')).json(), ['Echo', 'Fail', 'Upper', 'greet']);
    assert.equal(
      err(await s.req('GET', '/services/functions/free'), 404).message,
      'describe function free error: not found',
    );

    r = await s.req('DELETE', `/services/${name}`);
    assert.equal(r.status, 200);
    assert.equal(r.text, `service ${name} is deleted`);
    assert.deepEqual((await s.req('GET', '/services')).json(), []);
    assert.deepEqual((await s.req('GET', '/services/functions')).json(), [], 'its functions are deleted with it');
    assert.ok(!existsSync(join(s.homeDir, 'data', 'services', `${name}.json`)));
    const stream = uid('gone');
    assert.equal(
      (
        await s.req('POST', '/streams', {
          sql: `CREATE STREAM ${stream} () WITH (TYPE="memory", DATASOURCE="${stream}", FORMAT="json")`,
        })
      ).status,
      201,
    );
    r = await s.req('POST', '/rules', {
      id: uid('v'),
      sql: `SELECT greet(a, 1) FROM ${stream}`,
      actions: [{ log: {} }],
    });
    assert.deepEqual(err(r, 400), { error: 2101, message: 'function greet not found' }, 'the SQL function is gone');
  } finally {
    await s.dispose();
  }
});

test('bad requests and archives are refused with eKuiper texts; nothing is installed', async () => {
  const s = await startTestServer();
  try {
    const name = uid('svc');
    const file = archive(name, restDef());
    const post = (body: unknown) => s.req('POST', '/services', body);
    assert.deepEqual(err(await s.req('GET', '/services/nosuch'), 404), {
      error: 1002,
      message: 'describe service nosuch error: not found',
    });
    assert.deepEqual(err(await s.req('DELETE', '/services/nosuch'), 404), {
      error: 1002,
      message: 'delete service nosuch error: nosuch is not found',
    });
    assert.deepEqual(err(await s.req('PUT', '/services/nosuch', { file }), 404), {
      error: 1002,
      message: 'service update command error: nosuch is not found',
    });
    assert.equal(
      err(await post('{"name": '), 400).message.startsWith(
        'Invalid body: Error decoding the %s service request payload: ',
      ),
      true,
    );
    assert.equal(
      err(await post({ name: 5, file }), 400).message,
      'Invalid body: Error decoding the %s service request payload: json: cannot unmarshal number into Go struct field ServiceCreationRequest.name of type string',
    );
    assert.equal(
      err(await post({ name: 'a/b', file }), 400).message,
      'service create command error: ruleID:a/b contains invalidChar:/',
    );
    assert.match(
      err(await post({ name: '../x', file }), 400).message,
      /^service create command error: ruleID:\.\.\/x contains invalidChar:\//,
    );
    assert.match(
      err(await post({ name: 'a b', file }), 400).message,
      /^service create command error: invalid name a b/,
    );
    assert.equal(
      err(await post({ name, file: 'ftp://h/x.zip' }), 400).message,
      'service create command error: invalid file path ftp://h/x.zip',
    );
    assert.match(
      err(await post({ name, file: 'file:///no/such/file.zip' }), 400).message,
      /^service create command error: fail to download file file:\/\/\/no\/such\/file.zip: /,
    );
    assert.match(
      err(await post({ name, file: zips.raw(Buffer.from('not a zip')) }), 400).message,
      /^service create command error: invalid zip file/,
    );
    assert.equal(
      err(await post({ name, file: zips.zip({ 'other.json': '{}' }) }), 400).message,
      `service create command error: cannot find the json descriptor file ${name}.json for service`,
    );
    assert.match(
      err(await post({ name, file: zips.zip({ [`${name}.json`]: '{"interfaces": 1' }) }), 400).message,
      new RegExp(`^service create command error: parse services file ${name}\\.json error: `),
    );
    const missingSchema = restDef();
    missingSchema.interfaces.greeter.schemaFile = 'nosuch.proto';
    assert.match(
      err(await post({ name, file: zips.zip({ [`${name}.json`]: JSON.stringify(missingSchema) }) }), 400).message,
      /Fail to parse schema file nosuch\.proto/,
    );
    const escape = restDef();
    escape.interfaces.greeter.schemaFile = '../../etc/kuiper.yaml';
    assert.match(
      err(await post({ name, file: archive(name, escape) }), 400).message,
      /invalid schemaFile \.\.\/\.\.\/etc\/kuiper\.yaml/,
    );
    const noPort = {
      interfaces: {
        m: { address: 'tcp://127.0.0.1', protocol: 'msgpack-rpc', schemaType: 'protobuf', schemaFile: 'hello.proto' },
      },
    };
    assert.match(
      err(await post({ name, file: archive(name, noPort) }), 400).message,
      /the msgpack-rpc protocol needs tcp:\/\/host:port/,
    );

    // zip-slip: an entry leading outside the services folder refuses the whole archive
    const slip = archive(name, restDef()).replace(/^file:\/\//, '');
    const AdmZip = (await import('adm-zip')).default;
    const z = new AdmZip(slip);
    z.addFile('x', Buffer.from('evil'));
    z.getEntry('x')!.entryName = '../../evil.txt';
    assert.match(
      err(await post({ name, file: zips.raw(z.toBuffer()) }), 400).message,
      /invalid zip entry \.\.\/\.\.\/evil\.txt/,
    );
    assert.ok(!existsSync(join(s.homeDir, 'evil.txt')));

    assert.deepEqual((await s.req('GET', '/services')).json(), [], 'no failed create left anything');
    assert.equal((await post({ name, file })).status, 201);
    assert.equal(err(await post({ name, file }), 400).message, `service create command error: service ${name} exist`);
  } finally {
    await s.dispose();
  }
});

test('service functions are callable from SQL over REST: path templates, renamed fields, wrappers, schemaless, errors', async () => {
  const s = await startTestServer();
  try {
    const name = uid('svc');
    // the brief's `schema/` folder is accepted too (docs/compatibility.md K24)
    const r = await s.req('POST', '/services', { name, file: archive(name, restDef(), 'schema') });
    assert.equal(r.status, 201, r.text);

    // google.api.http: POST /v1/greet/{name}, the path field leaves the body
    assert.deepEqual(await runOnce(s, 'greet(who, 3) AS g', { who: 'bob' }), {
      g: { message: 'POST bob x3 keys=times' },
    });
    // one object argument maps by field name; JSON names are lowerCamel; int64 comes back as a bigint
    assert.deepEqual(
      await runOnce(s, 'Echo(obj) AS e', {
        obj: { user_name: 'ann', big: 9007199254740993n, ratio: 0.5, tags: ['a', 'b'] },
      }),
      {
        e: { user_name: 'ann', big: 9007199254740993n, ratio: 0.5, tags: ['a', 'b'], count: 7n },
      },
    );
    // wrapper input and output: the argument text is sent as-is, a text/plain answer becomes the bare value
    assert.deepEqual(await runOnce(s, 'Upper(t) AS u', { t: 'shout' }), { u: 'SHOUT' });
    // schemaless: iface(method, uri, body...) with the interface's headers
    assert.deepEqual(await runOnce(s, 'free("post", "/items?x=1", a, b) AS f', { a: 1, b: 'two' }), {
      f: { method: 'POST', url: '/api/items?x=1', body: [1, 'two'], key: 'k1' },
    });
    assert.deepEqual(await runOnce(s, 'free("get", "/text") AS f', { a: 1 }), { f: 'plain GET' });
    // a failing call is an error record; the rule keeps running
    const failed = await runOnce(s, 'Fail(a, 1) AS f', { a: 'x' });
    assert.match(
      String(failed.error),
      /call func Fail error: http call to .*\/Fail failed with status 500: backend exploded/,
    );
    const mismatch = await runOnce(s, 'greet(a) AS g', { a: 'x' });
    assert.match(String(mismatch.error), /the message HelloRequest has 2 fields, one argument cannot fill it/);
  } finally {
    await s.dispose();
  }
});

test('service functions are callable from SQL over gRPC', async () => {
  const s = await startTestServer();
  try {
    const name = uid('grpcsvc');
    const def = {
      interfaces: {
        g: {
          address: svc.grpcAddr,
          protocol: 'grpc',
          schemaType: 'protobuf',
          schemaFile: 'hello.proto',
          functions: [
            { name: 'ghello', serviceName: 'SayHello' },
            { name: 'gecho', serviceName: 'Echo' },
            { name: 'gupper', serviceName: 'Upper' },
            { name: 'gfail', serviceName: 'Fail' },
          ],
        },
      },
    };
    const r = await s.req('POST', '/services', { name, file: archive(name, def) });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(await runOnce(s, 'ghello(who, 2) AS g', { who: 'eve' }), { g: { message: 'grpc hello eve x2' } });
    assert.deepEqual(await runOnce(s, 'gecho(u, 12, 1.5, tags) AS e', { u: 'joe', tags: ['x', 'y', 'z'] }), {
      e: { user_name: 'joe', big: 12n, ratio: 1.5, tags: ['x', 'y', 'z'], count: 3n },
    });
    assert.deepEqual(await runOnce(s, 'gupper(t) AS u', { t: 'abc' }), { u: 'ABC' });
    const failed = await runOnce(s, 'gfail(a, 1) AS f', { a: 'x' });
    assert.match(String(failed.error), /call func gfail error: grpc call Fail failed with status 9: no luck/);
    const down = uid('down');
    const deadDef = {
      interfaces: {
        d: {
          address: 'tcp://127.0.0.1:1',
          protocol: 'grpc',
          schemaType: 'protobuf',
          schemaFile: 'hello.proto',
          functions: [{ name: 'dead', serviceName: 'SayHello' }],
        },
      },
    };
    assert.equal((await s.req('POST', '/services', { name: down, file: archive(down, deadDef) })).status, 201);
    const unreachable = await runOnce(s, 'dead(a, 1) AS d', { a: 'x' });
    assert.match(String(unreachable.error), /call func dead error: grpc call to tcp:\/\/127\.0\.0\.1:1 failed/);
  } finally {
    await s.dispose();
  }
});

test('services and their functions survive a restart; a built-in keeps its name', async () => {
  const s = await startTestServer();
  const name = uid('keep');
  const def = restDef();
  // `upper` is a built-in: the service records it, but SQL keeps calling the built-in
  def.interfaces.greeter.functions.push({ name: 'upper', serviceName: 'Upper' });
  assert.equal((await s.req('POST', '/services', { name, file: archive(name, def) })).status, 201);
  await s.stop();
  const again = await startTestServer({ home: s.homeDir });
  try {
    assert.deepEqual((await again.req('GET', '/services')).json(), [name]);
    assert.deepEqual((await again.req('GET', '/services/functions')).json(), [
      'Echo',
      'Fail',
      'free',
      'greet',
      'upper',
    ]);
    assert.deepEqual(await runOnce(again, 'greet(who, 1) AS g, upper(who) AS u', { who: 'al' }), {
      g: { message: 'POST al x1 keys=times' },
      u: 'AL',
    });
    assert.equal((await again.req('DELETE', `/services/${name}`)).status, 200);
  } finally {
    await again.dispose();
  }
});

test('bundle items: install records export as {name, file} and import again; an existing service is kept', async () => {
  const s = await startTestServer();
  try {
    const name = uid('bundled');
    const file = archive(name, restDef());
    const manager = s.app.services;
    await manager.importRecord(name, JSON.stringify({ name, file }));
    assert.deepEqual(manager.installRecords(), { [name]: JSON.stringify({ name, file }) });
    await manager.importRecord(name, JSON.stringify({ name, file: 'file:///elsewhere.zip' }));
    assert.deepEqual(
      manager.installRecords(),
      { [name]: JSON.stringify({ name, file }) },
      'the existing service is untouched',
    );
    await assert.rejects(manager.importRecord('x', '{'), /invalid service install record x/);
    await assert.rejects(
      manager.importRecord('y', JSON.stringify({ name: 'y', file: 'ftp://h/y.zip' })),
      /service create command error: invalid file path ftp:\/\/h\/y.zip/,
    );
    await manager.removeAll();
    assert.deepEqual((await s.req('GET', '/services/functions')).json(), []);
  } finally {
    await s.dispose();
  }
});

test('a schema may import a proto file installed by an earlier service', async () => {
  const s = await startTestServer();
  try {
    const first = uid('common');
    const common =
      'syntax = "proto3";\npackage shared;\nmessage Name { string name = 1; }\nmessage Greeting { string message = 1; }\n';
    const firstDef = {
      interfaces: { c: { address: svc.restUrl, protocol: 'rest', schemaType: 'protobuf', schemaFile: 'hello.proto' } },
    };
    let r = await s.req('POST', '/services', {
      name: first,
      file: zips.zip({
        [`${first}.json`]: JSON.stringify(firstDef),
        'schemas/hello.proto': HELLO_PROTO,
        'schemas/shared.proto': common,
      }),
    });
    assert.equal(r.status, 201, r.text);
    const second = uid('user');
    const proto =
      'syntax = "proto3";\nimport "shared.proto";\nservice Other { rpc SayHello (shared.Name) returns (shared.Greeting) { option (google.api.http) = { post: "/v1/greet/{name}" body: "*" }; } }\n';
    const secondDef = {
      interfaces: {
        o: {
          address: svc.restUrl,
          protocol: 'rest',
          schemaType: 'protobuf',
          schemaFile: 'other.proto',
          functions: [{ name: 'other_hello', serviceName: 'SayHello' }],
        },
      },
    };
    r = await s.req('POST', '/services', {
      name: second,
      file: zips.zip({ [`${second.toUpperCase()}.json`]: JSON.stringify(secondDef), 'schemas/other.proto': proto }),
    });
    assert.equal(r.status, 201, r.text);
    assert.deepEqual(await runOnce(s, 'other_hello(n) AS g', { n: 'zed' }), {
      g: { message: 'POST zed xundefined keys=' },
    });
  } finally {
    await s.dispose();
  }
});

test('service functions are callable from SQL over msgpack-rpc', async () => {
  const s = await startTestServer();
  try {
    const name = uid('mpsvc');
    const def = {
      interfaces: {
        m: {
          address: svc.msgpackAddr,
          protocol: 'msgpack-rpc',
          schemaType: 'protobuf',
          schemaFile: 'hello.proto',
          functions: [
            { name: 'mhello', serviceName: 'SayHello' },
            { name: 'mecho', serviceName: 'Echo' },
            { name: 'mupper', serviceName: 'Upper' },
            { name: 'mfail', serviceName: 'Fail' },
          ],
        },
      },
    };
    const r = await s.req('POST', '/services', { name, file: archive(name, def) });
    assert.equal(r.status, 201, r.text);
    // n arguments → n params in field order
    assert.deepEqual(await runOnce(s, 'mhello(who, 2) AS g', { who: 'kim' }), {
      g: { message: 'msgpack hello kim x2' },
    });
    // one object argument → one param, the message as a map; 64-bit ints travel exactly
    assert.deepEqual(
      await runOnce(s, 'mecho(obj) AS e', {
        obj: { user_name: 'lu', big: 9007199254740993n, ratio: 2.5, tags: ['p'] },
      }),
      {
        e: { user_name: 'lu', big: 9007199254740993n, ratio: 2.5, tags: ['p'], count: 1n },
      },
    );
    // wrapper types: the bare value goes out and comes back
    assert.deepEqual(await runOnce(s, 'mupper(t) AS u', { t: 'quiet' }), { u: 'QUIET' });
    const failed = await runOnce(s, 'mfail(a, 3) AS f', { a: 'x' });
    assert.match(
      String(failed.error),
      /call func mfail error: msgpack-rpc call Fail failed: no luck with Fail \["x",3\]/,
    );
  } finally {
    await s.dispose();
  }
});
