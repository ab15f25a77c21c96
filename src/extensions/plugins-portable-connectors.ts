/**
 * The sources and sinks of portable plugins (docs/runtime.md §5.3), on whichever thread their rule runs. Their data
 * travels over NNG sockets in the file system (IPC) between the connector and the plugin process, so the rule's own
 * thread listens and dials them; what only the main thread can do — start and stop the symbol in the plugin process,
 * which the plugin host keeps (plugins-host.ts), and know which plugins are installed — goes through a
 * {@link PortableControl}: the manager itself on the main thread (plugins-portable.ts), its relay on a rule worker
 * (plugins-portable-relay.ts).
 */
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../contracts/index.js';
import type { SinkConnector, SinkContext, SinkPayload } from '../contracts/index.js';
import { recoverable } from '../contracts/failures.js';
import type { Declaration } from '../connectors/declaration.js';
import { parseJsonExact } from '../connectors/formats/jsonparse.js';
import type { ValueObject } from '../values/index.js';
import { PullListener, PushDialer } from './plugins-nng.js';

const ACK_TIMEOUT_MS = 1000;
const DIAL_TIMEOUT_MS = 5000;
const REDIAL_TIMEOUT_MS = 200;

export type PortableKind = 'source' | 'sink';

/** What a portable source or sink asks of the plugin manager. */
export interface PortableControl {
  /** Throws `portable plugin providing <kind> <symbol> is not installed` (EddyError, executor) when it is not. */
  check(kind: PortableKind, symbol: string): void;
  /** A new operator id for one connector instance of `symbol` (it names its sockets); throws as {@link check}. */
  reserve(kind: PortableKind, symbol: string): Promise<string>;
  /** Starts or stops one instance in the plugin's process (started with its first instance). */
  command(kind: PortableKind, symbol: string, cmd: 'start' | 'stop', arg: string): Promise<void>;
}

/** The declaration of a plugin's source or sink type, the same on the main thread and on a rule worker. */
export function portableDeclaration(kind: PortableKind, type: string, control: PortableControl): Declaration {
  const common = { type, meta: null, check: null, validate: null, threads: { worker: true } } as const;
  return kind === 'source'
    ? {
        ...common,
        kind,
        create: () => new PortableSource(control, type),
        // a plugin's own source yaml becomes the user layer of its type (docs/runtime.md §5.3); it has no UI metadata
        defaults: `sources/${type}.yaml`,
      }
    : { ...common, kind, create: () => new PortableSink(control, type) };
}

function controlArg(
  symbol: string,
  pluginType: PortableKind,
  ruleId: string,
  opId: string,
  extra: Record<string, unknown>,
): string {
  return JSON.stringify({ symbolName: symbol, pluginType, meta: { ruleId, opId, instanceId: 0 }, ...extra });
}

/** A source provided by a portable plugin: the plugin pushes `{"message","meta"}` JSON to our PULL socket. */
class PortableSource implements SourceConnector {
  private datasource = '';
  private props: Props = {};
  private listener: PullListener | undefined;
  private startArg: string | undefined;

  constructor(
    private readonly control: PortableControl,
    private readonly symbol: string,
  ) {}

  provision(_ctx: ConnectorContext, datasource: string, props: Props): void {
    this.control.check('source', this.symbol);
    this.datasource = datasource;
    this.props = props;
  }

  async connect(ctx: ConnectorContext, emit: (ev: SourceEvent) => void): Promise<void> {
    const opId = await this.control.reserve('source', this.symbol);
    this.listener = await PullListener.listen(`/tmp/${ctx.ruleId}_${opId}_0.ipc`, (msg) => {
      let v: { message?: unknown; meta?: unknown; timestamp?: unknown };
      try {
        v = parseJsonExact(msg.toString('utf8')) as typeof v;
      } catch {
        ctx.logger.warn('portable source %s sent invalid JSON; it is skipped', this.symbol);
        return;
      }
      if (typeof v !== 'object' || v === null || typeof v.message !== 'object' || v.message === null) return;
      const ts = typeof v.timestamp === 'string' ? Date.parse(v.timestamp) : NaN;
      emit({
        payload: v.message as ValueObject | ValueObject[],
        meta: (typeof v.meta === 'object' && v.meta !== null ? v.meta : {}) as ValueObject,
        timestamp: Number.isFinite(ts) ? ts : Date.now(),
      });
    });
    const extra: Record<string, unknown> = { config: this.props };
    if (this.datasource !== '') {
      extra.dataSource = this.datasource;
      extra.datasource = this.datasource; // the 1.14 Python SDK reads the lower-case key
    }
    const arg = controlArg(this.symbol, 'source', ctx.ruleId, opId, extra);
    this.startArg = arg;
    try {
      await this.control.command('source', this.symbol, 'start', arg);
    } catch (e) {
      await this.listener.close();
      this.listener = undefined;
      throw new Error(`cannot start portable source ${this.symbol}: ${(e as Error).message}`);
    }
  }

  async close(): Promise<void> {
    await this.listener?.close();
    this.listener = undefined;
    const arg = this.startArg;
    this.startArg = undefined;
    if (arg !== undefined) await this.control.command('source', this.symbol, 'stop', arg).catch(() => undefined);
  }
}

/** A sink provided by a portable plugin: we PUSH each payload to the plugin's PULL socket, acks optional. */
class PortableSink implements SinkConnector {
  private props: Props = {};
  private requiredAcks = 0;
  private push: PushDialer | undefined;
  private dataPath: string | undefined;
  private ackListener: PullListener | undefined;
  private readonly ackWaiters: Array<(v: string) => void> = [];
  private startArg: string | undefined;

  constructor(
    private readonly control: PortableControl,
    private readonly symbol: string,
  ) {}

  provision(_ctx: SinkContext, props: Props): void {
    this.control.check('sink', this.symbol);
    this.props = props;
    const acks = props.requiredACKs;
    this.requiredAcks = typeof acks === 'number' && Number.isInteger(acks) && acks > 0 ? acks : 0;
  }

  async connect(ctx: SinkContext): Promise<void> {
    const opId = await this.control.reserve('sink', this.symbol);
    const base = `/tmp/${ctx.ruleId}_${opId}_0`;
    this.ackListener = await PullListener.listen(`${base}_ack.ipc`, (msg) =>
      this.ackWaiters.shift()?.(msg.toString('utf8')),
    );
    const arg = controlArg(this.symbol, 'sink', ctx.ruleId, opId, { config: this.props });
    try {
      await this.control.command('sink', this.symbol, 'start', arg);
      this.startArg = arg;
      this.dataPath = `${base}.ipc`;
      this.push = await PushDialer.dial(this.dataPath, DIAL_TIMEOUT_MS);
    } catch (e) {
      await this.close();
      throw new Error(`cannot start portable sink ${this.symbol}: ${(e as Error).message}`);
    }
  }

  async collect(_ctx: SinkContext, payload: SinkPayload): Promise<void> {
    if (!this.push || this.push.closed) {
      // the plugin process was restarted: its sink listens again once the remembered start was replayed
      this.push?.close();
      this.push = undefined;
      if (this.dataPath === undefined) throw recoverable(new Error(`portable sink ${this.symbol} is not connected`));
      try {
        this.push = await PushDialer.dial(this.dataPath, REDIAL_TIMEOUT_MS);
      } catch (e) {
        throw recoverable(new Error(`portable sink ${this.symbol} is not connected: ${(e as Error).message}`));
      }
    }
    const ack = this.requiredAcks > 0 ? this.nextAck() : undefined;
    this.push.send(payload.bytes);
    if (!ack) return;
    const text = await ack;
    let v: { error?: unknown };
    try {
      v = JSON.parse(text) as { error?: unknown };
    } catch {
      throw new Error(`invalid ack from portable sink ${this.symbol}: ${text}`);
    }
    if (typeof v.error === 'string' && v.error !== '') throw recoverable(new Error(v.error));
  }

  private nextAck(): Promise<string> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        const i = this.ackWaiters.indexOf(done);
        if (i >= 0) this.ackWaiters.splice(i, 1);
        reject(recoverable(new Error(`no ack from portable sink ${this.symbol} within ${ACK_TIMEOUT_MS}ms`)));
      }, ACK_TIMEOUT_MS);
      const done = (v: string) => {
        clearTimeout(t);
        resolve(v);
      };
      this.ackWaiters.push(done);
    });
  }

  async close(): Promise<void> {
    this.push?.close();
    this.push = undefined;
    this.dataPath = undefined;
    await this.ackListener?.close();
    this.ackListener = undefined;
    const arg = this.startArg;
    this.startArg = undefined;
    if (arg !== undefined) await this.control.command('sink', this.symbol, 'stop', arg).catch(() => undefined);
  }
}
