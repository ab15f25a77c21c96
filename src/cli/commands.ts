/**
 * The `kuiper`-compatible commands of `eddy`, each a REST call (docs/rest-api.md): same verbs, nouns and arguments as
 * eKuiper's command line (`create stream …`, `show rules`, `getstatus rule x`, …), readable output by default and the
 * server's JSON with `--json`.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { TYPE_CODES } from '../sql/schema.js';
import { CliError, ExitCode, type RestClient } from './client.js';
import { keyValues, ProgressBar, table } from './format.js';

export interface CommandContext {
  client: RestClient;
  json: boolean;
  /** `-f`: the file holding the definition */
  file?: string;
  /** `-s`: stop the server after an import / stop a plugin's rules before dropping it */
  stop: boolean;
  /** `-p`: partial import */
  partial: boolean;
  out: (text: string) => void;
}

type Handler = (ctx: CommandContext, args: string[]) => Promise<void>;

const PLUGIN_TYPES = ['source', 'sink', 'function', 'portable'];
const pluginPath = (type: string) => {
  if (!PLUGIN_TYPES.includes(type))
    throw new CliError(`plugin type must be one of ${PLUGIN_TYPES.join(', ')}`, ExitCode.Usage);
  return type === 'portable' ? 'portables' : `${type}s`;
};

function need(args: string[], n: number, usage: string): void {
  if (args.length < n) throw new CliError(`usage: eddy ${usage}`, ExitCode.Usage);
}

function readInput(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`, ExitCode.Usage);
  }
}

function parseJsonArg(text: string, what: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new CliError(`${what} must be a JSON object`, ExitCode.Usage);
}

/** The definition of `create <kind> name '<json>'` or `-f file`. */
function jsonDefinition(ctx: CommandContext, rest: string[], what: string): Record<string, unknown> {
  if (ctx.file) return parseJsonArg(readInput(ctx.file), `${what} in ${ctx.file}`);
  if (rest.length === 0) throw new CliError(`${what}: give its JSON definition or -f <file>`, ExitCode.Usage);
  return parseJsonArg(rest.join(' '), what);
}

function print(ctx: CommandContext, body: unknown, readable: () => string): void {
  ctx.out(ctx.json ? JSON.stringify(body, null, 2) : readable());
}

function textOf(body: unknown): string {
  return typeof body === 'string' ? body.trim() : JSON.stringify(body, null, 2);
}

/** A field type of a describe answer as SQL text (`bigint`, `array(string)`, `struct(a float)`). */
function typeName(t: { Type?: number; ElementType?: unknown; Fields?: unknown }): string {
  if (t.Type === 7) return `array(${typeName((t.ElementType ?? {}) as typeof t)})`;
  if (t.Type === 8) {
    const fields = (t.Fields ?? []) as Array<{ Name: string; FieldType: typeof t }>;
    return `struct(${fields.map((f) => `${f.Name} ${typeName(f.FieldType)}`).join(', ')})`;
  }
  return Object.entries(TYPE_CODES).find(([, code]) => code === t.Type)?.[0] ?? `type ${String(t.Type)}`;
}

// ------------------------------------------------------------------------------------------------- streams, tables

/**
 * The statement of `create stream|table -f <file>`. The file holds what kuiper's does — the statement without its
 * `CREATE STREAM` (`my_stream (…) WITH (…);`) — or a whole statement, or eKuiper's `{"sql": "…"}` body; with a name
 * given too (`create stream s1 -f f`), just the `(fields) WITH (…)` part.
 */
export function statementFromFile(kind: 'stream' | 'table', text: string, name?: string): string {
  const t = text.trim();
  if (t.startsWith('{')) return String(parseJsonArg(t, `${kind} definition`).sql ?? '');
  // one statement: the trailing semicolon of a file is not part of it
  const body = t.replace(/;\s*$/, '');
  if (/^create\s+(stream|table)\b/i.test(body)) return body;
  const head = `CREATE ${kind.toUpperCase()}`;
  return name !== undefined && body.startsWith('(') ? `${head} ${name} ${body}` : `${head} ${body}`;
}

async function createStreamOrTable(ctx: CommandContext, kind: 'stream' | 'table', args: string[]): Promise<void> {
  let sql: string;
  if (ctx.file) {
    sql = statementFromFile(kind, readInput(ctx.file), args[0]);
  } else {
    need(args, 2, `create ${kind} <name> '<(fields) WITH (options)>'`);
    const [name, ...rest] = args;
    sql = `CREATE ${kind.toUpperCase()} ${name} ${rest.join(' ')}`;
  }
  const ans = await ctx.client.call('POST', `/${kind}s`, { sql });
  print(ctx, ans.body, () => textOf(ans.body));
}

async function describeStreamOrTable(ctx: CommandContext, kind: 'stream' | 'table', name: string): Promise<void> {
  const ans = await ctx.client.call('GET', `/${kind}s/${encodeURIComponent(name)}`);
  const d = ans.body as {
    StreamFields?: Array<{ Name: string; FieldType: { Type?: number } }>;
    Options?: Record<string, unknown>;
  };
  print(ctx, ans.body, () => {
    const fields = d.StreamFields ?? [];
    const parts = [
      fields.length > 0
        ? table(
            ['Field', 'Type'],
            fields.map((f) => [f.Name, typeName(f.FieldType)]),
          )
        : '(schemaless)',
      '',
      keyValues(d.Options ?? {}),
    ];
    return parts.join('\n');
  });
}

async function showNames(ctx: CommandContext, path: string, header: string): Promise<void> {
  const ans = await ctx.client.call('GET', path);
  const list = Array.isArray(ans.body) ? ans.body : [];
  print(ctx, ans.body, () =>
    list.length === 0
      ? `no ${header.toLowerCase()}s`
      : table(
          [header],
          list.map((x) => [
            typeof x === 'string'
              ? x
              : ((x as { name?: string; id?: string }).name ?? (x as { id?: string }).id ?? JSON.stringify(x)),
          ]),
        ),
  );
}

/** Bare `show`: the server's streams, tables and rules at once, and what else `show` lists. */
async function showEverything(ctx: CommandContext): Promise<void> {
  const [streams, tables, rules] = await Promise.all(
    ['/streams', '/tables', '/rules'].map(async (p) => (await ctx.client.call('GET', p)).body),
  );
  const list = (v: unknown) => (Array.isArray(v) ? v : []) as unknown[];
  const ruleRows = list(rules) as Array<{ id: string; name?: string; status: string }>;
  print(ctx, { streams, tables, rules }, () =>
    [
      list(streams).length === 0
        ? 'no streams'
        : table(
            ['Stream'],
            list(streams).map((x) => [x]),
          ),
      '',
      list(tables).length === 0
        ? 'no tables'
        : table(
            ['Table'],
            list(tables).map((x) => [x]),
          ),
      '',
      ruleRows.length === 0
        ? 'no rules'
        : table(
            ['Rule', 'Name', 'Status'],
            ruleRows.map((r) => [r.id, r.name ?? '', r.status]),
          ),
      '',
      'also: eddy show services | service_funcs | plugins <source|sink|function|portable> | schemas protobuf',
    ].join('\n'),
  );
}

// ------------------------------------------------------------------------------------------------------------ rules

async function showRules(ctx: CommandContext): Promise<void> {
  const ans = await ctx.client.call('GET', '/rules');
  const list = (Array.isArray(ans.body) ? ans.body : []) as Array<{
    id: string;
    name?: string;
    status: string;
    state?: string;
    node?: string;
  }>;
  // a cluster's server names the node running each rule (docs/cluster.md §5)
  const clustered = list.some((r) => r.node !== undefined);
  // Eddy says whether a running rule works (degraded: a source or sink not connected); a kuiper server does not
  const stated = list.some((r) => r.state !== undefined);
  print(ctx, ans.body, () =>
    list.length === 0
      ? 'no rules'
      : table(
          ['ID', 'Name', 'Status', ...(stated ? ['State'] : []), ...(clustered ? ['Node'] : [])],
          list.map((r) => [
            r.id,
            r.name ?? '',
            r.status,
            ...(stated ? [r.state ?? ''] : []),
            ...(clustered ? [r.node ?? ''] : []),
          ]),
        ),
  );
}

/** `eddy cluster`: the nodes of the cluster (`GET /cluster`, docs/cluster.md §5). */
export async function showCluster(ctx: CommandContext): Promise<void> {
  const ans = await ctx.client.call('GET', '/cluster');
  const view = ans.body as {
    backend?: string;
    nodes?: Array<{ id: string; rest: string; alive: boolean; lastSeen: number; rules: string[] }>;
  };
  const nodes = view.nodes ?? [];
  print(ctx, ans.body, () =>
    [
      table(
        ['Node', 'REST', 'Alive', 'Last seen', 'Rules'],
        nodes.map((n) => [
          n.id,
          n.rest,
          n.alive ? 'yes' : 'no',
          new Date(n.lastSeen).toISOString(),
          `${n.rules.length}${n.rules.length > 0 ? `: ${n.rules.join(', ')}` : ''}`,
        ]),
      ),
      `backend: ${view.backend ?? ''}`,
    ].join('\n'),
  );
}

async function ruleStatus(ctx: CommandContext, id: string): Promise<void> {
  const ans = await ctx.client.call('GET', `/rules/${encodeURIComponent(id)}/status`);
  print(ctx, ans.body, () => keyValues(ans.body as Record<string, unknown>));
}

async function ruleTopo(ctx: CommandContext, id: string): Promise<void> {
  const ans = await ctx.client.call('GET', `/rules/${encodeURIComponent(id)}/topo`);
  const t = ans.body as { sources?: string[]; edges?: Record<string, string[]> };
  print(ctx, ans.body, () =>
    [
      `sources: ${(t.sources ?? []).join(', ')}`,
      ...Object.entries(t.edges ?? {}).map(([from, to]) => `  ${from} -> ${to.join(', ')}`),
    ].join('\n'),
  );
}

// ----------------------------------------------------------------------------------------------------- import/export

async function importData(ctx: CommandContext): Promise<void> {
  if (!ctx.file) throw new CliError('usage: eddy import data -f <file> [-p true] [-s true]', ExitCode.Usage);
  await importBundle(ctx, readInput(ctx.file), `importing ${ctx.file}`, ctx.partial, ctx.stop);
}

function parsedOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** `import error: {"streams":{…},…}`: the status document of a failed import as `{ConfigResponse}`, if it is one. */
function statusDocumentIn(message: string): { ConfigResponse: Record<string, unknown> } | undefined {
  const at = message.indexOf('{');
  if (at < 0) return undefined;
  const doc = parsedOr(message.slice(at));
  if (typeof doc !== 'object' || doc === null || !('rules' in doc) || !('streams' in doc)) return undefined;
  return { ConfigResponse: doc as Record<string, unknown> };
}

/** The item failures of an import's status document, as `[section, item, message]`. */
function failuresOf(result: unknown): string[][] {
  const status = ((result as { ConfigResponse?: unknown } | null)?.ConfigResponse ?? {}) as Record<string, unknown>;
  return Object.entries(status).flatMap(([section, items]) =>
    Object.entries((items ?? {}) as Record<string, unknown>).map(([n, m]) => [section, n, String(m)]),
  );
}

/**
 * Runs an import of a bundle text as an asynchronous task (`POST /async/data/import`, the same import as
 * `POST /data/import`), with a bar of the items applied; items that failed are listed, and end the command with 1.
 */
export async function importBundle(
  ctx: CommandContext,
  content: string,
  label: string,
  partial: boolean,
  stop = false,
): Promise<void> {
  const q = partial ? '?partial=1' : stop ? '?stop=1' : '';
  const started = await ctx.client.call('POST', `/async/data/import${q}`, { content });
  const id = encodeURIComponent((started.body as { id: string }).id);
  const bar = ctx.json ? undefined : new ProgressBar(label);
  let counts = { done: 0, total: 0 };
  for (;;) {
    const p = (await ctx.client.call('GET', `/async/task/${id}/progress`)).body as {
      status: string;
      done: number;
      total: number;
    };
    if (p.total > 0) counts = p;
    if (p.status !== 'register' && p.status !== 'running') break;
    if (p.total > 0) bar?.update(p.done, p.total);
    await new Promise((r) => setTimeout(r, 100));
  }
  const rec = (await ctx.client.call('GET', `/async/task/${id}`)).body as { status: string; message: string };
  // a finished task's message is the import's answer; a failed one's names the items that failed, when some did
  const result = rec.status === 'finish' ? parsedOr(rec.message) : statusDocumentIn(rec.message);
  if (result === undefined) {
    bar?.finish();
    throw new CliError(`import ${rec.status}: ${rec.message}`, ExitCode.Rejected);
  }
  const failures = failuresOf(result);
  const total = Math.max(counts.total, counts.done, failures.length);
  const applied = Math.max(0, total - failures.length);
  bar?.update(applied, total, failures.length > 0 ? `imported, ${failures.length} failed` : 'imported');
  bar?.finish();
  print(ctx, result, () =>
    failures.length === 0
      ? `imported ${total} item${total === 1 ? '' : 's'}`
      : `imported ${applied} of ${total} items; these failed:\n${table(['Section', 'Name', 'Problem'], failures)}`,
  );
  if (failures.length > 0)
    throw new CliError(`${failures.length} of ${total} items could not be imported`, ExitCode.Rejected);
}

async function exportTo(ctx: CommandContext, kind: string, args: string[]): Promise<void> {
  need(args, 1, `export ${kind} <file>`);
  const [file, ...ruleIds] = args;
  const ans =
    kind === 'ruleset'
      ? await ctx.client.call('POST', '/ruleset/export')
      : ruleIds.length > 0
        ? await ctx.client.call('POST', '/data/export', ruleIds)
        : await ctx.client.call('GET', '/data/export');
  writeFileSync(file, ans.text);
  print(ctx, { file, bytes: Buffer.byteLength(ans.text) }, () => `exported to ${file}`);
}

// ------------------------------------------------------------------------------------------------------ dispatching

const simple =
  (method: string, path: (a: string[]) => string, usage: string, min = 1): Handler =>
  async (ctx, args) => {
    need(args, min, usage);
    const ans = await ctx.client.call(method, path(args));
    print(ctx, ans.body, () => textOf(ans.body));
  };

const enc = encodeURIComponent;

/** `verb noun` → handler; the arguments after the noun are passed on. */
export const COMMANDS: Record<string, Handler> = {
  'create stream': (ctx, a) => createStreamOrTable(ctx, 'stream', a),
  'create table': (ctx, a) => createStreamOrTable(ctx, 'table', a),
  'create rule': async (ctx, a) => {
    need(a, ctx.file ? 0 : 2, "create rule <id> '<json>' | create rule <id> -f <file>");
    const def = jsonDefinition(ctx, a.slice(1), 'rule');
    if (a[0]) def.id = a[0];
    const ans = await ctx.client.call('POST', '/rules', def);
    print(ctx, ans.body, () => textOf(ans.body));
  },
  'create plugin': async (ctx, a) => {
    need(a, 2, "create plugin <source|sink|function|portable> <name> '<json>' | -f <file>");
    const def = jsonDefinition(ctx, a.slice(2), 'plugin');
    def.name = a[1];
    const ans = await ctx.client.call('POST', `/plugins/${pluginPath(a[0])}`, def);
    print(ctx, ans.body, () => textOf(ans.body));
  },
  'register plugin': async (ctx, a) => {
    need(a, 2, `register plugin function <name> '{"functions":[…]}'`);
    if (a[0] !== 'function') throw new CliError('only function plugins are registered', ExitCode.Usage);
    const ans = await ctx.client.call(
      'POST',
      `/plugins/functions/${enc(a[1])}/register`,
      jsonDefinition(ctx, a.slice(2), 'functions'),
    );
    print(ctx, ans.body, () => textOf(ans.body));
  },
  'create service': async (ctx, a) => {
    need(a, 1, "create service <name> '<json>' | -f <file>");
    const def = jsonDefinition(ctx, a.slice(1), 'service');
    def.name = a[0];
    const ans = await ctx.client.call('POST', '/services', def);
    print(ctx, ans.body, () => textOf(ans.body));
  },
  'create schema': async (ctx, a) => {
    need(a, 2, "create schema protobuf <name> '<json>' | -f <file>");
    const def = jsonDefinition(ctx, a.slice(2), 'schema');
    def.name = a[1];
    const ans = await ctx.client.call('POST', `/schemas/${enc(a[0])}`, def);
    print(ctx, ans.body, () => textOf(ans.body));
  },

  'show ': (ctx) => showEverything(ctx),
  'show streams': (ctx) => showNames(ctx, '/streams', 'Stream'),
  'show tables': (ctx) => showNames(ctx, '/tables', 'Table'),
  'show rules': (ctx) => showRules(ctx),
  'show plugins': async (ctx, a) => {
    need(a, 1, 'show plugins <source|sink|function|portable>');
    await showNames(ctx, `/plugins/${pluginPath(a[0])}`, 'Plugin');
  },
  'show services': (ctx) => showNames(ctx, '/services', 'Service'),
  'show service_funcs': (ctx) => showNames(ctx, '/services/functions', 'Function'),
  'show schemas': async (ctx, a) => {
    need(a, 1, 'show schemas protobuf');
    await showNames(ctx, `/schemas/${enc(a[0])}`, 'Schema');
  },

  'describe stream': async (ctx, a) => (
    need(a, 1, 'describe stream <name>'),
    describeStreamOrTable(ctx, 'stream', a[0])
  ),
  'describe table': async (ctx, a) => (need(a, 1, 'describe table <name>'), describeStreamOrTable(ctx, 'table', a[0])),
  'describe rule': simple('GET', (a) => `/rules/${enc(a[0])}`, 'describe rule <id>'),
  'describe plugin': simple(
    'GET',
    (a) => `/plugins/${pluginPath(a[0])}/${enc(a[1])}`,
    'describe plugin <type> <name>',
    2,
  ),
  'describe service': simple('GET', (a) => `/services/${enc(a[0])}`, 'describe service <name>'),
  'describe service_func': simple('GET', (a) => `/services/functions/${enc(a[0])}`, 'describe service_func <name>'),
  'describe schema': simple('GET', (a) => `/schemas/${enc(a[0])}/${enc(a[1])}`, 'describe schema protobuf <name>', 2),

  'drop stream': simple('DELETE', (a) => `/streams/${enc(a[0])}`, 'drop stream <name>'),
  'drop table': simple('DELETE', (a) => `/tables/${enc(a[0])}`, 'drop table <name>'),
  'drop rule': simple('DELETE', (a) => `/rules/${enc(a[0])}`, 'drop rule <id>'),
  'drop plugin': async (ctx, a) => {
    need(a, 2, 'drop plugin <type> <name> [-s true]');
    const ans = await ctx.client.call(
      'DELETE',
      `/plugins/${pluginPath(a[0])}/${enc(a[1])}${ctx.stop ? '?stop=1' : ''}`,
    );
    print(ctx, ans.body, () => textOf(ans.body));
  },
  'drop service': simple('DELETE', (a) => `/services/${enc(a[0])}`, 'drop service <name>'),
  'drop schema': simple('DELETE', (a) => `/schemas/${enc(a[0])}/${enc(a[1])}`, 'drop schema protobuf <name>', 2),

  'getstatus rule': async (ctx, a) => (need(a, 1, 'getstatus rule <id>'), ruleStatus(ctx, a[0])),
  'getstatus import': async (ctx) => {
    const ans = await ctx.client.call('GET', '/data/import/status');
    print(ctx, ans.body, () => textOf(ans.body));
  },
  'gettopo rule': async (ctx, a) => (need(a, 1, 'gettopo rule <id>'), ruleTopo(ctx, a[0])),
  'start rule': simple('POST', (a) => `/rules/${enc(a[0])}/start`, 'start rule <id>'),
  'stop rule': simple('POST', (a) => `/rules/${enc(a[0])}/stop`, 'stop rule <id>'),
  'restart rule': simple('POST', (a) => `/rules/${enc(a[0])}/restart`, 'restart rule <id>'),

  'import ruleset': async (ctx) => {
    if (!ctx.file) throw new CliError('usage: eddy import ruleset -f <file>', ExitCode.Usage);
    const ans = await ctx.client.call('POST', '/ruleset/import', { content: readInput(ctx.file) });
    print(ctx, ans.body, () => textOf(ans.body));
  },
  'import data': (ctx) => importData(ctx),
  'export ruleset': (ctx, a) => exportTo(ctx, 'ruleset', a),
  'export data': (ctx, a) => exportTo(ctx, 'data', a),
};
