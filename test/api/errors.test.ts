/**
 * Errors by class (src/api/server.ts, src/core/errors.ts): what the client got wrong is a 4xx with eKuiper's error
 * body; a bug (an error JavaScript raises by itself) is a 500, logged once with its stack and counted, whichever
 * translation of the route it went through.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { createHttp, unexpectedErrorCount } from '../../src/api/server.js';
import { asEddyError, readJson, restated, rethrowing } from '../../src/api/http.js';
import { EddyError, ErrorCode, isDefect, notFound } from '../../src/core/errors.js';
import { PrometheusExporter } from '../../src/api/prometheus.js';

function capturedLogger(): { logger: pino.Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

/** A route whose code has a bug: it reads a property of what is undefined. */
function buggy(input: Record<string, { name: string }>): string {
  return input.missing!.name;
}

function app() {
  const { logger, lines } = capturedLogger();
  const http = createHttp(logger, { maxBodySize: 1000 });
  http.get('/bug', async () => buggy({}));
  http.get('/bug/translated', async () => rethrowing(() => buggy({}), asEddyError('get thing error')));
  http.get('/bug/restated', async () => rethrowing(() => buggy({}), restated('thing: ')));
  http.get('/bug/overflow', async () => {
    const deep = (n: number): number => deep(n + 1) + 1;
    return deep(0);
  });
  http.get('/refused', async () => {
    throw new EddyError(ErrorCode.Stream, 'no such thing here');
  });
  http.get('/missing', async () => {
    throw notFound('thing t1 was not found');
  });
  http.get('/lower', async () => rethrowing(() => JSON.parse('{x'), asEddyError('read thing error')));
  http.get('/plain', async () => {
    throw new Error('the connector refused the properties');
  });
  http.post('/json', async (req) => JSON.stringify(readJson(req, 'Invalid body: ')));
  return { http, lines };
}

test('a bug in a route is a 500 with the error body, its stack logged once and counted', async () => {
  const { http, lines } = app();
  try {
    for (const [path, n] of [
      ['/bug', 1],
      ['/bug/translated', 2],
      ['/bug/restated', 3],
      ['/bug/overflow', 4],
    ] as const) {
      const r = await http.inject({ method: 'GET', url: path });
      assert.equal(r.statusCode, 500, `${path}: ${r.body}`);
      const body = r.json();
      assert.deepEqual(Object.keys(body), ['error', 'message']);
      assert.equal(body.error, 1000);
      assert.match(body.message, /^internal error: /);
      assert.equal(unexpectedErrorCount(http), n, path);
      const logged = lines.filter((l) => String(l.msg).startsWith('unexpected error in GET'));
      assert.equal(logged.length, n, `${path} is logged once`);
      const err = logged.at(-1)!.err as { type: string; stack: string };
      assert.match(err.stack, path === '/bug/overflow' ? /RangeError/ : /TypeError[\s\S]*buggy/, path);
    }
  } finally {
    await http.close();
  }
});

test('what the client got wrong stays a 4xx with eKuiper body, not counted as unexpected', async () => {
  const { http, lines } = app();
  try {
    const cases: Array<[string, string, string | undefined, Record<string, string>, number, RegExp]> = [
      ['GET', '/refused', undefined, {}, 400, /^no such thing here$/],
      ['GET', '/missing', undefined, {}, 404, /^thing t1 was not found$/],
      ['GET', '/lower', undefined, {}, 400, /^read thing error: .*JSON/],
      ['GET', '/plain', undefined, {}, 400, /^the connector refused the properties$/],
      ['POST', '/json', '{"a":', { 'content-type': 'application/json' }, 400, /^Invalid body: /],
      ['POST', '/json', 'not json', { 'content-type': 'text/plain' }, 400, /^Invalid body: invalid character/],
      ['POST', '/json', '{"a":1}', { 'content-type': ';;; nonsense' }, 415, /^Unsupported Media Type$/],
      ['POST', '/json', '[1]'.padEnd(2000, ' '), { 'content-type': 'application/json' }, 413, /basic\.maxBodySize/],
    ];
    for (const [method, url, payload, headers, status, message] of cases) {
      const r = await http.inject({ method: method as 'GET', url, payload, headers });
      assert.equal(r.statusCode, status, `${method} ${url} ${JSON.stringify(headers)}: ${r.body}`);
      if (status >= 400) {
        assert.match(r.json().message, message);
        assert.equal(typeof r.json().error, 'number');
      }
    }
    assert.equal(unexpectedErrorCount(http), 0);
    assert.deepEqual(
      lines.filter((l) => Number(l.level) >= 50),
      [],
    );
  } finally {
    await http.close();
  }
});

test('isDefect: the classes JavaScript throws by itself are bugs, errors thrown on purpose are refusals', () => {
  assert.equal(isDefect(new TypeError('x')), true);
  assert.equal(isDefect(new RangeError('x')), true);
  assert.equal(isDefect(new ReferenceError('x')), true);
  assert.equal(isDefect('a string thrown'), true);
  assert.equal(isDefect(undefined), true);
  assert.equal(isDefect(new Error('refused')), false);
  assert.equal(isDefect(new SyntaxError('Unexpected token')), false);
  assert.equal(isDefect(new EddyError(ErrorCode.Plan, 'bad plan')), false);
  class ConnectorRefusal extends Error {}
  assert.equal(isDefect(new ConnectorRefusal('bad url')), false);
});

test('the unexpected errors are a series of GET /metrics', async () => {
  let n = 0;
  const exporter = new PrometheusExporter({ metricsSnapshot: () => [] }, () => n);
  assert.match(await exporter.scrape(), /^eddy_rest_unexpected_errors_total 0$/m);
  n = 3;
  assert.match(await exporter.scrape(), /^eddy_rest_unexpected_errors_total 3$/m);
});
