/**
 * The neuron source and sink (docs/runtime.md §2.5 and §3.6; docs/connectors.md): the Neuron
 * industrial gateway's eKuiper channel, an NNG PAIR socket (nng-pair.ts) dialled at `url`. One connection per URL is
 * shared by every neuron source and sink of the server. The source turns each message (a JSON object) into one row;
 * the sink writes, for each row and tag, `{"group_name","node_name","tag_name","value"}`, or with `raw` the encoded
 * payload as it is.
 */
import { EddyError, ErrorCode } from '../../core/errors.js';
import type { ConnectorContext, Props, SourceConnector, SourceEvent } from '../../contracts/index.js';
import type { SinkConnector, SinkContext, SinkPayload } from '../../contracts/index.js';
import { toJson } from '../../values/json.js';
import { isObject, type Value, type ValueObject } from '../../values/value.js';
import { JsonFormat } from '../formats/json.js';
import { transientError } from '../../contracts/failures.js';
import { nngAddress } from './nng-pair.js';
import { NEURON_URL, type NeuronLink, type NeuronLinks } from './pool.js';
import { prop, propBool, propString, propStringList } from '../props.js';
import { recoverable } from '../../contracts/failures.js';

function readUrl(props: Props): string {
  const url = propString(props, 'url', NEURON_URL);
  nngAddress(url);
  return url;
}

export class NeuronSource implements SourceConnector {
  private url = NEURON_URL;
  private asBytes = true;
  private readonly json = new JsonFormat({ schema: null });
  private cleanup: Array<() => void> = [];

  constructor(private readonly pool: NeuronLinks) {}

  provision(_ctx: ConnectorContext, _datasource: string, props: Props): void {
    try {
      this.url = readUrl(props);
    } catch (e) {
      throw new EddyError(ErrorCode.Executor, (e as Error).message);
    }
    // FORMAT is ignored: messages are JSON; with the default json format the stream's decoder types them
    const format = prop(props, 'format');
    this.asBytes = format === undefined || format === 'json';
  }

  async connect(_ctx: ConnectorContext, emit: (ev: SourceEvent) => void, onError: (err: Error) => void): Promise<void> {
    const shared = this.pool.acquire(this.url);
    const onMessage = (msg: Buffer): void => {
      let payload: Uint8Array | ValueObject;
      try {
        payload = this.asBytes ? new Uint8Array(msg) : (this.json.decode(msg) as ValueObject);
      } catch (e) {
        onError(transientError(new Error(`neuron message decode error: ${(e as Error).message}`)));
        return;
      }
      emit({ payload, meta: {}, timestamp: Date.now() });
    };
    const onStatus = (connected: boolean, err?: Error): void => {
      if (!connected) onError(transientError(new Error(`neuron connection detached: ${err?.message ?? 'closed'}`)));
    };
    shared.messages.add(onMessage);
    shared.statuses.add(onStatus);
    this.cleanup.push(() => {
      shared.messages.delete(onMessage);
      shared.statuses.delete(onStatus);
      this.pool.release(this.url);
    });
  }

  async close(_ctx: ConnectorContext): Promise<void> {
    for (const c of this.cleanup.splice(0)) c();
  }
}

interface SinkSettings {
  url: string;
  nodeName: string;
  groupName: string;
  tags: string[] | undefined;
  raw: boolean;
}

export class NeuronSink implements SinkConnector {
  private s!: SinkSettings;
  private shared: NeuronLink | undefined;

  constructor(private readonly pool: NeuronLinks) {}

  provision(_ctx: SinkContext, props: Props): void {
    try {
      const raw = propBool(props, 'raw', false);
      const s: SinkSettings = {
        url: readUrl(props),
        nodeName: propString(props, 'nodeName', ''),
        groupName: propString(props, 'groupName', ''),
        tags: propStringList(props, 'tags'),
        raw,
      };
      if (!raw && s.nodeName === '') throw new Error('node name is required if raw is not set');
      if (!raw && s.groupName === '') throw new Error('group name is required if raw is not set');
      this.s = s;
    } catch (e) {
      throw new EddyError(ErrorCode.Executor, (e as Error).message);
    }
  }

  async connect(_ctx: SinkContext): Promise<void> {
    this.shared = this.pool.acquire(this.s.url);
  }

  private sendOne(bytes: Uint8Array): void {
    if (!this.shared?.send(bytes)) throw recoverable(new Error(`neuron at ${this.s.url} is not connected`));
  }

  async collect(ctx: SinkContext, payload: SinkPayload): Promise<void> {
    if (this.s.raw) {
      this.sendOne(payload.bytes);
      return;
    }
    const data: Value = payload.data;
    const rows = (Array.isArray(data) ? data : [data]).filter((r): r is ValueObject => isObject(r));
    const render = (t: string, row: ValueObject) => (t.includes('{{') ? ctx.render(t, row) : t);
    for (const row of rows) {
      const node = render(this.s.nodeName, row);
      const group = render(this.s.groupName, row);
      const tags = this.s.tags && this.s.tags.length > 0 ? this.s.tags.map((t) => render(t, row)) : Object.keys(row);
      for (const tag of tags) {
        const value = row[tag];
        if (value === undefined) continue;
        const msg = `{"group_name":${JSON.stringify(group)},"node_name":${JSON.stringify(node)},"tag_name":${JSON.stringify(tag)},"value":${toJson(value, { sortKeys: true })}}`;
        this.sendOne(Buffer.from(msg));
      }
    }
  }

  async close(_ctx: SinkContext): Promise<void> {
    if (this.shared) this.pool.release(this.s.url);
    this.shared = undefined;
  }
}
