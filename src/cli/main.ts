#!/usr/bin/env node
/**
 * `eddy`: the command line of Eddy, talking to a running server over its REST API (`--host`, `--port`, the token of
 * `EDDY_TOKEN` when authentication is on). `eddy start` runs the server itself. Exit codes: see `ExitCode`.
 */
import { parseArgs } from 'node:util';
import { COMMANDS, showCluster, type CommandContext } from './commands.js';
import { CliError, ExitCode, RestClient } from './client.js';
import { runQueryShell } from './query.js';
import { runEkuiperImport } from './ekuiper.js';
import { EDDY_VERSION } from '../api/root.js';

const HELP = `usage: eddy [--host H] [--port P] [--json] <command>

  start                                   run the server (EDDY_HOME, KUIPER__… overrides)
  status                                  server information
  query                                   interactive SQL shell: rows of a SELECT as they arrive
  help, --version                         this text; the version
  cluster                                 the nodes of the cluster, whether alive, and the rules each runs

  create stream|table <name> '<(fields) WITH (…)>' | -f <file>
  create rule <id> '<json>' | -f <file>
  create plugin <source|sink|function|portable> <name> '<json>' | -f <file>
  register plugin function <name> '{"functions":[…]}'
  create service <name> '<json>'          create schema protobuf <name> '<json>'
  show                                    the streams, tables and rules at once
  show streams|tables|rules|services|service_funcs   show plugins <type>   show schemas protobuf
  describe stream|table|rule|service|service_func <name>   describe plugin <type> <name>   describe schema protobuf <name>
  drop stream|table|rule|service <name>   drop plugin <type> <name> [-s true]   drop schema protobuf <name>
  getstatus rule <id>   getstatus import   gettopo rule <id>   start|stop|restart rule <id>
  import ruleset -f <file>                import data -f <file> [-p true] [-s true]
  export ruleset <file>                   export data <file> [ruleId …]
  import ekuiper <eKuiper home>           bring over what an eKuiper 1.14 installation stored (docs/migrating.md)

options: --host (default 127.0.0.1), --port (default 9081), --json (the server's JSON), -f/--file, -s/--stop, -p/--partial
exit codes: 0 ok, 1 the server refused, 2 bad usage, 3 server unreachable, 4 unauthorized`;

const truthy = (v: string | undefined) => v !== undefined && ['true', '1', 'yes'].includes(v.toLowerCase());

function context(
  client: RestClient,
  values: { json?: boolean; file?: string; stop?: string; partial?: string },
): CommandContext {
  return {
    client,
    json: values.json === true,
    file: values.file,
    stop: truthy(values.stop),
    partial: truthy(values.partial),
    out: (t: string) => process.stdout.write(`${t}\n`),
  };
}

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        host: { type: 'string', default: process.env.EDDY_HOST ?? '127.0.0.1' },
        port: { type: 'string', default: process.env.EDDY_PORT ?? '9081' },
        json: { type: 'boolean', default: false },
        file: { type: 'string', short: 'f' },
        stop: { type: 'string', short: 's' },
        partial: { type: 'string', short: 'p' },
        help: { type: 'boolean', short: 'h', default: false },
        version: { type: 'boolean', short: 'v', default: false },
      },
    });
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n\n${HELP}\n`);
    return ExitCode.Usage;
  }
  const { values, positionals } = parsed;
  if (values.version || positionals[0] === 'version') {
    process.stdout.write(`eddy version ${EDDY_VERSION}\n`);
    return ExitCode.Ok;
  }
  if (values.help || positionals[0] === 'help' || positionals.length === 0) {
    process.stdout.write(`${HELP}\n`);
    return values.help || positionals[0] === 'help' ? ExitCode.Ok : ExitCode.Usage;
  }
  const [verb, noun, ...rest] = positionals;
  if (verb === 'start' && noun === undefined) {
    // `eddy --port 9091 start` means the server's port, as kuiper.yaml's basic.restPort
    if (argv.some((a) => a === '--port' || a.startsWith('--port='))) process.env.KUIPER__BASIC__RESTPORT = values.port;
    if (argv.some((a) => a === '--host' || a.startsWith('--host='))) process.env.KUIPER__BASIC__RESTIP = values.host;
    await import('../main.js');
    return -1; // the server keeps the process alive
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    process.stderr.write(`invalid --port ${values.port}\n`);
    return ExitCode.Usage;
  }
  const client = new RestClient(values.host!, port, process.env.EDDY_TOKEN || undefined);
  const out = (t: string) => process.stdout.write(`${t}\n`);
  try {
    if (verb === 'query') {
      await runQueryShell(client, values.json!);
      return ExitCode.Ok;
    }
    if (verb === 'status') {
      const ans = await client.call('GET', '/');
      out(
        values.json
          ? JSON.stringify(ans.body, null, 2)
          : Object.entries(ans.body as object)
              .map(([k, v]) => `${k}: ${String(v)}`)
              .join('\n'),
      );
      return ExitCode.Ok;
    }
    if (verb === 'cluster' && noun === undefined) {
      await showCluster(context(client, values));
      return ExitCode.Ok;
    }
    if (verb === 'import' && noun === 'ekuiper') {
      await runEkuiperImport(context(client, values), rest);
      return ExitCode.Ok;
    }
    const handler = COMMANDS[`${verb} ${noun ?? ''}`];
    if (!handler) {
      // a known verb with a missing or unknown noun gets that verb's lines of the usage
      const lines = HELP.split('\n').filter((l) => new RegExp(`(^|\\s)${verb}\\b`).test(l.trimStart()));
      const known = Object.keys(COMMANDS).some((k) => k.startsWith(`${verb} `));
      process.stderr.write(
        known
          ? `eddy ${positionals.join(' ')}: say what to ${verb}:\n${lines.join('\n')}\n`
          : `unknown command: ${positionals.join(' ')}\n\n${HELP}\n`,
      );
      return ExitCode.Usage;
    }
    await handler(context(client, values), rest);
    return ExitCode.Ok;
  } catch (e) {
    if (e instanceof CliError) {
      process.stderr.write(`${e.message}\n`);
      return e.exitCode;
    }
    throw e;
  }
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exitCode = code;
