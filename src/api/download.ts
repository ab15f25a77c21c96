/**
 * Export downloads (docs/rest-api.md §7.4, §8.2): eKuiper serves them as a file modified "now", so they carry
 * `Accept-Ranges: bytes` and honour `Range`, `If-Range` and `If-Modified-Since` the way Go's content server does.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PlainTextFailure, rethrowing } from './http.js';

interface ByteRange {
  start: number;
  length: number;
}

class RangeError416 extends Error {}

/** Go's `parseRange`: undefined when there is no header; throws for a header that cannot be served. */
function parseRange(header: string | undefined, size: number): ByteRange[] | undefined {
  if (header === undefined || header === '') return undefined;
  if (!header.startsWith('bytes=')) throw new RangeError416('invalid range');
  const out: ByteRange[] = [];
  let noOverlap = false;
  for (const raw of header.slice(6).split(',')) {
    const spec = raw.trim();
    if (spec === '') continue;
    const dash = spec.indexOf('-');
    if (dash < 0) throw new RangeError416('invalid range');
    const from = spec.slice(0, dash).trim();
    const to = spec.slice(dash + 1).trim();
    const num = (t: string) => {
      if (!/^\d+$/.test(t)) throw new RangeError416('invalid range');
      return Number(t);
    };
    if (from === '') {
      // suffix: the last n bytes
      if (to === '') throw new RangeError416('invalid range');
      const n = Math.min(num(to), size);
      out.push({ start: size - n, length: n });
      continue;
    }
    const start = num(from);
    if (start >= size) {
      noOverlap = true;
      continue;
    }
    let end = to === '' ? size - 1 : num(to);
    if (start > end) throw new RangeError416('invalid range');
    if (end >= size) end = size - 1;
    out.push({ start, length: end - start + 1 });
  }
  if (noOverlap && out.length === 0) throw new RangeError416('invalid range: failed to overlap');
  return out;
}

/** Seconds precision, as HTTP dates have. */
function httpDateSeconds(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : Math.floor(t / 1000);
}

/** Sends `text` as the downloaded export. */
export function sendDownload(req: FastifyRequest, reply: FastifyReply, text: string): FastifyReply {
  const body = Buffer.from(text, 'utf8');
  const size = body.length;
  const now = new Date();
  const modified = Math.floor(now.getTime() / 1000);
  reply
    .header('Content-Disposition', 'Attachment; filename="ekuiper_export.json"')
    .header('Accept-Ranges', 'bytes')
    .header('Last-Modified', now.toUTCString());

  const get = req.method === 'GET' || req.method === 'HEAD';
  const since = get ? httpDateSeconds(req.headers['if-modified-since']) : undefined;
  if (since !== undefined && modified <= since) {
    return reply.code(304).removeHeader('Content-Type').send();
  }
  let rangeHeader = typeof req.headers.range === 'string' ? req.headers.range : undefined;
  const ifRange = req.headers['if-range'];
  // only a date can match (there is no ETag); a range that does not apply yields the whole body
  if (rangeHeader !== undefined && typeof ifRange === 'string' && httpDateSeconds(ifRange) !== modified)
    rangeHeader = undefined;

  let ranges: ByteRange[] | undefined = rethrowing(
    () => parseRange(rangeHeader, size),
    (e) =>
      new PlainTextFailure(416, `${(e as Error).message}\n`, {
        'Content-Range': `bytes */${size}`,
        'X-Content-Type-Options': 'nosniff',
      }),
  );
  if (ranges !== undefined && ranges.reduce((n, r) => n + r.length, 0) > size) ranges = undefined;
  if (ranges === undefined || ranges.length === 0) {
    return reply.code(200).header('Content-Type', 'application/octet-stream').send(body);
  }
  if (ranges.length === 1) {
    const r = ranges[0];
    return reply
      .code(206)
      .header('Content-Type', 'application/octet-stream')
      .header('Content-Range', `bytes ${r.start}-${r.start + r.length - 1}/${size}`)
      .send(body.subarray(r.start, r.start + r.length));
  }
  const boundary = randomBytes(30).toString('hex');
  const parts: Buffer[] = [];
  for (const r of ranges) {
    const head =
      `\r\n--${boundary}\r\nContent-Range: bytes ${r.start}-${r.start + r.length - 1}/${size}\r\n` +
      'Content-Type: application/octet-stream\r\n\r\n';
    parts.push(Buffer.from(parts.length === 0 ? head.slice(2) : head), body.subarray(r.start, r.start + r.length));
  }
  parts.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return reply
    .code(206)
    .header('Content-Type', `multipart/byteranges; boundary=${boundary}`)
    .send(Buffer.concat(parts));
}
