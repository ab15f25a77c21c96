/**
 * The common TLS properties of client connectors (docs/runtime.md §2.4): `insecureSkipVerify`, `certificationPath`,
 * `privateKeyPath`, `rootCaPath` (files), `certificationRaw`, `privateKeyRaw`, `rootCARaw` (base64 PEM),
 * `tlsMinVersion`. TLS options are produced only when at least one of them is set.
 */
import { readFileSync } from 'node:fs';
import type { SecureVersion } from 'node:tls';
import type { Props } from '../contracts/index.js';
import { hasProp, propBool, propString } from './props.js';

export interface TlsSettings {
  rejectUnauthorized: boolean;
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
  minVersion?: SecureVersion;
}

const KEYS = [
  'insecureSkipVerify',
  'certificationPath',
  'privateKeyPath',
  'rootCaPath',
  'certificationRaw',
  'privateKeyRaw',
  'rootCARaw',
  'tlsMinVersion',
];
const VERSIONS: Record<string, SecureVersion> = {
  'tls1.0': 'TLSv1',
  'tls1.1': 'TLSv1.1',
  'tls1.2': 'TLSv1.2',
  'tls1.3': 'TLSv1.3',
};

function material(props: Props, pathKey: string, rawKey: string): Buffer | undefined {
  const raw = propString(props, rawKey);
  if (raw) return Buffer.from(raw, 'base64');
  const path = propString(props, pathKey);
  if (path) {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`fail to read ${pathKey} ${path}: ${(err as Error).message}`);
    }
  }
  return undefined;
}

/** TLS settings from connector properties, or undefined when none of the TLS keys is set. */
export function tlsSettings(props: Props): TlsSettings | undefined {
  if (!KEYS.some((k) => hasProp(props, k))) return undefined;
  const min = propString(props, 'tlsMinVersion', 'tls1.2');
  const minVersion = VERSIONS[min.toLowerCase()];
  if (!minVersion) throw new Error(`invalid tlsMinVersion ${min}`);
  const out: TlsSettings = { rejectUnauthorized: !propBool(props, 'insecureSkipVerify', false), minVersion };
  const cert = material(props, 'certificationPath', 'certificationRaw');
  const key = material(props, 'privateKeyPath', 'privateKeyRaw');
  const ca = material(props, 'rootCaPath', 'rootCARaw');
  if (cert) out.cert = cert;
  if (key) out.key = key;
  if (ca) out.ca = ca;
  return out;
}
