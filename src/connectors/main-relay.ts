/**
 * Connectors whose instances must live on the main thread, used by rules on the workers (docs/runtime.md §1.10).
 * zeromq aborts the whole process when a worker thread holding its sockets ends (the pool terminates a worker to
 * replace it), so a zmq rule on a worker keeps its sockets here: the worker checks the properties itself (the same
 * class, never connected there, answers the same errors when the rule is created), and asks the main thread, over a
 * message port of its own, to connect an instance for it; the main thread sends it each event and error of a source,
 * and answers each payload a sink sends with its result. A worker that ends (its port closes) has every instance it
 * opened here closed. The rule's own work — decoding, the query, encoding — stays on the worker.
 */
import type { MessagePort } from 'node:worker_threads';
import type {
  ConnectorContext,
  Props,
  SinkConnector,
  SinkContext,
  SourceConnector,
  SourceEvent,
} from '../contracts/index.js';
import { isRecoverable, isTransient, recoverable, transientError } from '../contracts/failures.js';
import { Replies, tellPort } from '../core/replies.js';
import { decodeValue, encodeValue, type Json } from '../runtime/checkpoint.js';
import type { Logger } from '../config/log.js';
import type { Value, ValueObject } from '../values/value.js';

/** What the main thread needs to make an instance: its registry's factories and what a context holds. */
export interface MainConnectors {
  source(type: string): (() => SourceConnector) | undefined;
  sink(type: string): (() => SinkConnector) | undefined;
  readonly logger: Logger;
  readonly dataDir: string;
  render(template: string, data: unknown): string;
}

interface Failure {
  message: string;
  transient?: boolean;
  recoverable?: boolean;
}

/** Worker → main. */
type Ask =
  | { k: 'openSource'; id: number; type: string; ruleId: string; datasource: string; props: Props; stream?: string }
  | { k: 'openSink'; id: number; type: string; ruleId: string; props: Props; cacheEnabled?: boolean }
  | { k: 'collect'; id: number; instance: number; bytes: Uint8Array; data: Json; rows: Json; resend?: boolean }
  | { k: 'close'; id: number; instance: number };

/** Main → worker. */
type Tell =
  | { k: 'reply'; id: number; failure?: Failure }
  | { k: 'event'; instance: number; payload: Uint8Array | Json; meta: Json; timestamp: number }
  | { k: 'error'; instance: number; failure: Failure };

const failureOf = (err: unknown): Failure => ({
  message: err instanceof Error ? err.message : String(err),
  ...(isTransient(err) ? { transient: true } : {}),
  ...(isRecoverable(err) ? { recoverable: true } : {}),
});

function errorOf(f: Failure): Error {
  let err = new Error(f.message);
  if (f.transient) err = transientError(err);
  if (f.recoverable) err = recoverable(err);
  return err;
}

/** The main thread's side: serves the port of each worker with instances of this thread's connectors. */
export class MainRelayServer {
  constructor(private readonly main: MainConnectors) {}

  serve(port: MessagePort): void {
    /** how to close each instance this worker opened, by the id of the request that opened it */
    const closers = new Map<number, () => Promise<void>>();
    const sinks = new Map<number, { c: SinkConnector; ctx: SinkContext }>();
    const tell = tellPort<Tell>(port);
    const answer = (id: number, p: Promise<unknown>): void => {
      p.then(
        () => tell({ k: 'reply', id }),
        (err: unknown) => tell({ k: 'reply', id, failure: failureOf(err) }),
      );
    };
    const context = (ruleId: string): SinkContext => ({
      ruleId,
      logger: this.main.logger.child({ rule: ruleId }),
      dataDir: this.main.dataDir,
      render: (t, d) => this.main.render(t, d),
    });
    const openSource = async (m: Extract<Ask, { k: 'openSource' }>): Promise<void> => {
      const make = this.main.source(m.type);
      if (!make) throw new Error(`source type ${m.type} not found`);
      const c = make();
      const ctx: ConnectorContext = {
        ...context(m.ruleId),
        ...(m.stream === undefined ? {} : { streamName: m.stream }),
      };
      c.provision(ctx, m.datasource, m.props);
      const instance = m.id;
      closers.set(instance, () => c.close(ctx));
      await c.connect(
        ctx,
        (ev: SourceEvent) =>
          tell({
            k: 'event',
            instance,
            payload: ev.payload instanceof Uint8Array ? ev.payload : encodeValue(ev.payload as Value),
            meta: encodeValue(ev.meta),
            timestamp: ev.timestamp,
          }),
        (err) => tell({ k: 'error', instance, failure: failureOf(err) }),
      );
    };
    const openSink = async (m: Extract<Ask, { k: 'openSink' }>): Promise<void> => {
      const make = this.main.sink(m.type);
      if (!make) throw new Error(`sink type ${m.type} not found`);
      const c = make();
      const ctx: SinkContext = { ...context(m.ruleId), ...(m.cacheEnabled ? { cacheEnabled: true } : {}) };
      c.provision(ctx, m.props);
      closers.set(m.id, () => c.close(ctx));
      sinks.set(m.id, { c, ctx });
      await c.connect(ctx);
    };
    const collect = async (m: Extract<Ask, { k: 'collect' }>): Promise<void> => {
      const s = sinks.get(m.instance);
      if (!s) throw recoverable(new Error('the sink is not open'));
      await s.c.collect(s.ctx, {
        bytes: m.bytes,
        data: decodeValue(m.data),
        rows: decodeValue(m.rows) as ValueObject[],
        ...(m.resend ? { resend: true } : {}),
      });
    };
    port.on('message', (m: Ask) => {
      switch (m.k) {
        case 'openSource':
          answer(m.id, openSource(m));
          return;
        case 'openSink':
          answer(m.id, openSink(m));
          return;
        case 'collect':
          answer(m.id, collect(m));
          return;
        case 'close': {
          const close = closers.get(m.instance);
          closers.delete(m.instance);
          sinks.delete(m.instance);
          answer(m.id, close ? close() : Promise.resolve());
          return;
        }
      }
    });
    // the worker ended (replaced, or the server stops): what it opened here is closed
    port.on('close', () => {
      for (const close of closers.values()) void close().catch(() => undefined);
      closers.clear();
      sinks.clear();
    });
  }
}

/**
 * A worker's side: instances of the main thread's connectors. Each stand-in checks its properties with the real class
 * here (never connected on this thread), so a rule is refused at its creation with the same text.
 */
export class MainRelayClient {
  private readonly replies = new Replies<void>();
  private readonly sources = new Map<number, { emit: (ev: SourceEvent) => void; onError: (err: Error) => void }>();

  constructor(private readonly port: MessagePort) {
    // the relay must not keep the worker alive
    port.unref();
    port.on('message', (m: Tell) => this.onTell(m));
  }

  private onTell(m: Tell): void {
    if (m.k === 'reply') {
      this.replies.settle(m.id, m.failure === undefined ? undefined : JSON.stringify(m.failure), undefined);
      return;
    }
    const s = this.sources.get(m.instance);
    if (!s) return;
    if (m.k === 'error') {
      s.onError(errorOf(m.failure));
      return;
    }
    s.emit({
      payload: m.payload instanceof Uint8Array ? m.payload : (decodeValue(m.payload) as ValueObject),
      meta: decodeValue(m.meta) as ValueObject,
      timestamp: m.timestamp,
    });
  }

  /** Asks the main thread; a failure comes back with its text and its transient and recoverable marks. */
  async ask(make: (id: number) => Ask): Promise<number> {
    let asked = 0;
    try {
      await this.replies.ask((id) => {
        asked = id;
        this.port.postMessage(make(id));
      });
    } catch (e) {
      throw errorOf(JSON.parse((e as Error).message) as Failure);
    }
    return asked;
  }

  /** A stand-in for a source of `type` whose properties `local` (the real class) checks. */
  source(type: string, local: SourceConnector): SourceConnector {
    let datasource = '';
    let props: Props = {};
    let instance: number | undefined;
    return {
      provision: (ctx, ds, p) => {
        local.provision(ctx, ds, p);
        datasource = ds;
        props = p;
      },
      connect: async (ctx, emit, onError) => {
        const opened = this.ask((id) => {
          this.sources.set(id, { emit, onError });
          return {
            k: 'openSource',
            id,
            type,
            ruleId: ctx.ruleId,
            datasource,
            props,
            ...(ctx.streamName === undefined ? {} : { stream: ctx.streamName }),
          };
        });
        instance = await opened;
      },
      close: async () => {
        const open = instance;
        instance = undefined;
        if (open === undefined) return;
        this.sources.delete(open);
        await this.ask((id) => ({ k: 'close', id, instance: open })).catch(() => undefined);
      },
    };
  }

  /** A stand-in for a sink of `type` whose properties `local` (the real class) checks. */
  sink(type: string, local: SinkConnector): SinkConnector {
    let props: Props = {};
    let instance: number | undefined;
    return {
      provision: (ctx, p) => {
        local.provision(ctx, p);
        props = p;
      },
      connect: async (ctx) => {
        instance = await this.ask((id) => ({
          k: 'openSink',
          id,
          type,
          ruleId: ctx.ruleId,
          props,
          ...(ctx.cacheEnabled ? { cacheEnabled: true } : {}),
        }));
      },
      collect: async (_ctx, payload) => {
        const open = instance;
        if (open === undefined) throw recoverable(new Error(`${type} sink is not connected`));
        await this.ask((id) => ({
          k: 'collect',
          id,
          instance: open,
          bytes: payload.bytes,
          data: encodeValue(payload.data),
          rows: encodeValue(payload.rows as Value),
          ...(payload.resend ? { resend: true } : {}),
        }));
      },
      close: async () => {
        const open = instance;
        instance = undefined;
        if (open !== undefined) await this.ask((id) => ({ k: 'close', id, instance: open })).catch(() => undefined);
      },
    };
  }
}
