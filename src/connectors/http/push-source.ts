/**
 * The httppush source (docs/runtime.md §2.5 httppush): a path (DATASOURCE) and method on the shared HTTP data server.
 * Each request body must be one JSON object; the answer is `200 ok`, or `400 Fail to decode data: …` (also
 * reported to the rule as an error). Every source instance reading the same endpoint receives every body.
 */
import { TOO_DEEP_MESSAGE, jsonTooDeep } from '../../core/limits.js';
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { DataServer } from '../dataserver.js';
import { propString } from '../props.js';
import { transientError } from '../../contracts/failures.js';
import type { PushConsumer as Consumer, PushHub } from '../data-relay.js';
import { SharedUses } from '../data-uses.js';

/** Endpoints by `METHOD path`, registered on the data server while at least one source uses them. */
export class HttpPushHub implements PushHub {
  private readonly endpoints = new SharedUses<Consumer>();

  constructor(private readonly server: DataServer) {}

  attach(method: string, path: string, consumer: Consumer): Promise<() => Promise<void>> {
    return this.endpoints.attach(`${method} ${path}`, consumer, (consumers) =>
      this.server.addRoute(method, path, (req, body, res) => {
        const text = body.toString('utf8');
        const problem = checkBody(text);
        if (problem) {
          // a bad body is an error row for the rule, not the end of it
          const err = transientError(new Error(`Fail to decode data: ${problem}`));
          for (const c of consumers) c.onError(err);
          res.writeHead(400, { 'Content-Type': 'text/plain; charset=utf-8' }).end(err.message + '\n');
          return;
        }
        const payload = new Uint8Array(body);
        const ts = Date.now();
        // a W3C trace context travels with the record: rule tracing's `head` strategy continues it (docs/runtime.md §1.11)
        const traceparent = req.headers.traceparent;
        const meta = typeof traceparent === 'string' ? { traceparent } : {};
        for (const c of consumers) c.emit({ payload, meta, timestamp: ts });
        res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' }).end('ok');
      }),
    );
  }
}

/** Why a body is not one JSON object (Go's decoder wording), or undefined when it is. */
function checkBody(text: string): string | undefined {
  if (jsonTooDeep(text)) return TOO_DEEP_MESSAGE;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    if (text.trim() === '') return 'EOF';
    const m = /Unexpected token '?(.)'?/.exec((e as Error).message);
    if (m) return `invalid character '${m[1]}' looking for beginning of value`;
    return 'unexpected end of JSON input';
  }
  if (Array.isArray(v)) return 'json: cannot unmarshal array into Go value of type map[string]interface {}';
  if (v === null || typeof v !== 'object')
    return `json: cannot unmarshal ${v === null ? 'null' : typeof v === 'string' ? 'string' : typeof v === 'boolean' ? 'bool' : 'number'} into Go value of type map[string]interface {}`;
  return undefined;
}

export class HttpPushSource implements SourceConnector {
  private method = 'POST';
  private path = '';
  private detach: (() => Promise<void>) | undefined;

  constructor(private readonly hub: PushHub) {}

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    if (!datasource.startsWith('/'))
      throw new EddyError(
        ErrorCode.Executor,
        `property datasource must start with '/', got ${JSON.stringify(datasource)}`,
      );
    const method = propString(props, 'method', 'POST').toUpperCase();
    if (method !== 'POST' && method !== 'PUT')
      throw new EddyError(ErrorCode.Executor, `property method must be POST or PUT, got ${method}`);
    const ct = propString(props, 'contentType', 'application/json');
    if (ct !== 'application/json')
      throw new EddyError(ErrorCode.Executor, `property contentType must be application/json, got ${ct}`);
    this.method = method;
    this.path = datasource;
  }

  async connect(_ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    this.detach = await this.hub.attach(this.method, this.path, { emit, onError });
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    const d = this.detach;
    this.detach = undefined;
    if (d) await d();
  }
}
