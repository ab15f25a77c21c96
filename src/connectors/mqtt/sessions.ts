/**
 * The persistent MQTT sessions a rule opened (at-least-once sources, docs/runtime.md §1.9), remembered in the
 * metadata store (namespace `mqttsession:<ruleId>`) so that deleting the rule — even after a restart — makes the
 * broker forget them: otherwise a broker keeps queueing messages for a client that never comes back.
 */
import type { KVStore } from '../../store/kv.js';
import type { TlsSettings } from '../tls.js';

/** What is needed to reconnect under a session's client id (the connection settings of mqtt.ts). */
export interface SessionSettings {
  server: string;
  clientId?: string;
  username?: string;
  password?: string;
  protocolVersion: 3 | 4;
  tls?: TlsSettings;
}

const namespace = (ruleId: string): string => `mqttsession:${ruleId}`;

function encode(s: SessionSettings): string {
  return JSON.stringify(s, (_k, v: unknown) => {
    if (
      v &&
      typeof v === 'object' &&
      (v as { type?: unknown }).type === 'Buffer' &&
      Array.isArray((v as { data?: unknown }).data)
    ) {
      return { $buf: Buffer.from((v as { data: number[] }).data).toString('base64') };
    }
    return v;
  });
}

function decode(text: string): SessionSettings {
  return JSON.parse(text, (_k, v: unknown) =>
    v && typeof v === 'object' && typeof (v as { $buf?: unknown }).$buf === 'string'
      ? Buffer.from((v as { $buf: string }).$buf, 'base64')
      : v,
  ) as SessionSettings;
}

export class MqttSessionLedger {
  /** `<ruleId>\0<clientId>` already written in this process (one write per session, not per connect) */
  private readonly known = new Set<string>();

  constructor(private readonly store: KVStore) {}

  remember(ruleId: string, s: SessionSettings): void {
    const id = s.clientId ?? '';
    const k = `${ruleId}\u0000${id}`;
    if (this.known.has(k)) return;
    this.known.add(k);
    this.store.set(namespace(ruleId), id, encode(s)).catch(() => this.known.delete(k));
  }

  /** Ends every remembered session of a rule through `end` (a clean connect under its client id), then forgets them. */
  async forget(ruleId: string, end: (s: SessionSettings) => Promise<void>): Promise<void> {
    for (const [id, text] of await this.store.entries(namespace(ruleId))) {
      this.known.delete(`${ruleId}\u0000${id}`);
      try {
        await end(decode(text));
      } catch {
        // an unreachable broker keeps the session until its own expiry (Mosquitto: persistent_client_expiration)
      }
    }
    await this.store.clear(namespace(ruleId));
  }
}
