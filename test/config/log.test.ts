/**
 * The server's log (config/log.ts, config/log-file.ts): readable console lines keep a cause logged as text, and
 * `log/stream.log` is rotated by size and by time with eKuiper's keys, old files deleted by count or age.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, prepareHome, resolveHome, type Home } from '../../src/config/index.js';
import { closeLogger, createLogger, readableLine } from '../../src/config/log.js';
import { rotatedName } from '../../src/config/log-file.js';
import { startTestServer } from '../helpers/server.js';
import { publisher, uniqueTopic } from '../connectors/helpers.js';

async function until<T>(what: string, fn: () => T | undefined | Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function withHome(fn: (home: Home) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'eddy-log-'));
  const home = resolveHome(dir);
  prepareHome(home);
  return fn(home).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** rotated files, oldest first: by name, `.2` before `.10` for two rotations within one second */
const rotated = (home: Home) =>
  readdirSync(home.log)
    .filter((n) => n.startsWith('stream.log.'))
    .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));

test('a console line prints the cause of an error logged as its text', () => {
  const line = readableLine(
    JSON.stringify({
      level: 50,
      time: 0,
      rule: 'errrule',
      err: 'connect ECONNREFUSED 127.0.0.1:1',
      msg: 'rule run failed',
    }),
  );
  assert.equal(
    line,
    '1970-01-01T00:00:00.000Z ERROR [rule=errrule] rule run failed: connect ECONNREFUSED 127.0.0.1:1\n',
  );
  const withStack = readableLine(
    JSON.stringify({ level: 50, time: 0, err: { message: 'boom', stack: 'Error: boom\n    at x' }, msg: 'failed' }),
  );
  assert.match(withStack, /failed\n {4}Error: boom\n {8}at x/);
});

test('stream.log is rotated at rotateSize and only the newest rotateCount rotated files are kept', () =>
  withHome(async (home) => {
    const config = loadConfig(home, {
      KUIPER__BASIC__ROTATESIZE: '4000',
      KUIPER__BASIC__ROTATECOUNT: '2',
      KUIPER__BASIC__CONSOLELOG: 'false',
    });
    const logger = createLogger(config, home);
    const live = join(home.log, 'stream.log');
    try {
      for (let i = 0; i < 200; i++) {
        logger.info({ n: i }, 'a line of about eighty characters to fill the log file quickly %d', i);
        if (i % 20 === 0) await new Promise((r) => setTimeout(r, 20));
      }
    } finally {
      await closeLogger(logger);
    }
    const files = rotated(home);
    assert.equal(files.length, 2, files.join(', '));
    for (const f of files) assert.match(f, /^stream\.log\.\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d(\.\d+)?$/);
    assert.ok(statSync(live).size < 8000, `live file ${statSync(live).size} bytes`);
    // nothing lost from the newest files: the last line is in the live file, numbered lines continue across them
    const lines = [...files, 'stream.log']
      .flatMap((f) => readFileSync(join(home.log, f), 'utf8').split('\n'))
      .filter((l) => l !== '')
      .map((l) => (JSON.parse(l) as { n: number }).n);
    assert.equal(lines.at(-1), 199);
    for (let i = 1; i < lines.length; i++) assert.equal(lines[i], lines[i - 1] + 1);
  }));

test('stream.log is rotated every rotateTime hours; rotated files older than maxAge are deleted', () =>
  withHome(async (home) => {
    // a rotated file left by an earlier run, four hours old
    const stale = rotatedName(join(home.log, 'stream.log'), new Date(Date.now() - 4 * 3_600_000));
    writeFileSync(stale, '{"msg":"old"}\n');
    const fourHoursAgo = new Date(Date.now() - 4 * 3_600_000);
    utimesSync(stale, fourHoursAgo, fourHoursAgo);
    // one second per file, kept for three hours, no size limit
    const config = loadConfig(home, {
      KUIPER__BASIC__ROTATETIME: String(1 / 3600),
      KUIPER__BASIC__MAXAGE: '3',
      KUIPER__BASIC__ROTATESIZE: '0',
    });
    const logger = createLogger(config, home);
    try {
      logger.info('first');
      await until('two rotations', () => {
        logger.info('tick');
        return rotated(home).length >= 2 ? true : undefined;
      });
    } finally {
      await closeLogger(logger);
    }
    const files = rotated(home);
    assert.ok(!files.includes(stale.split('/').at(-1)!), 'the file older than maxAge is gone');
    assert.ok(files.length >= 2);
  }));

test('a rule on a worker thread keeps logging into the live stream.log after the main thread rotated it', async () => {
  const s = await startTestServer({
    env: {
      KUIPER__BASIC__WORKERS: '2',
      KUIPER__BASIC__FILELOG: 'true',
      KUIPER__BASIC__ROTATESIZE: '3000',
      KUIPER__BASIC__ROTATECOUNT: '100',
    },
  });
  const topic = uniqueTopic('logrot');
  const pub = await publisher();
  const live = join(s.homeDir, 'log', 'stream.log');
  const home = { log: join(s.homeDir, 'log') } as Home;
  try {
    const id = `logrot_${process.pid}`;
    let r = await s.req('POST', '/streams', {
      sql: `CREATE STREAM st_${id} (n BIGINT) WITH (DATASOURCE="${topic}", FORMAT="json")`,
    });
    assert.equal(r.status, 201, r.text);
    r = await s.req('POST', '/rules', { id, sql: `SELECT n FROM st_${id}`, actions: [{ log: {} }] });
    assert.equal(r.status, 201, r.text);
    const st = (await s.req('GET', `/rules/${id}/status`)).json() as { worker?: number };
    assert.equal(typeof st.worker, 'number', 'the rule runs on a worker thread');
    let n = 0;
    // the worker's lines fill the file until the main thread rotated it at least twice
    await until('two rotations', async () => {
      await pub.publishAsync(topic, JSON.stringify({ n: n++ }));
      return rotated(home).length >= 2 ? true : undefined;
    });
    // then the worker's next lines reach the new live file, not only the renamed one
    const firstAfter = n;
    await until('a worker line in the live file', async () => {
      await pub.publishAsync(topic, JSON.stringify({ n: n++ }));
      const lines = existsSync(live) ? readFileSync(live, 'utf8').split('\n') : [];
      return lines.some((l) => l.includes('"worker":') && l.includes('sink result') && numberIn(l) >= firstAfter)
        ? true
        : undefined;
    });
  } finally {
    await pub.endAsync();
    await s.dispose();
  }
});

/** the `n` of a log sink line `… [{"n":12}]` */
function numberIn(line: string): number {
  const m = /\\"n\\":(\d+)/.exec(line);
  return m ? Number(m[1]) : -1;
}
