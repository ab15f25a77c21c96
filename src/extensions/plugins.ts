/**
 * What native and portable plugins share (docs/rest-api.md §10): the install request, the archive URL check and the
 * prebuilt-plugin catalogue computed as eKuiper computes it. Native plugins (ES modules): plugins-native.ts;
 * portable plugins: plugins-portable.ts.
 */
import { readFileSync } from 'node:fs';
import { EddyError, ErrorCode } from '../core/errors.js';
import { idTooLong } from '../core/limits.js';

export type NativeType = 'sources' | 'sinks' | 'functions';

export const NATIVE_TYPES: readonly NativeType[] = ['sources', 'sinks', 'functions'];

export interface PluginRequest {
  name: string;
  file: string;
  shellParas: string[];
  functions: string[];
}

const bad = (msg: string) => new EddyError(ErrorCode.Undefined, msg);

/** The plugin archive URL check: http, https or file (no host, absolute path), ending in `.zip`. */
export function checkUri(uri: string): boolean {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return false;
  }
  if (!url.pathname.endsWith('.zip')) return false;
  if (url.protocol === 'file:') return url.host === '' && url.pathname.startsWith('/');
  return (url.protocol === 'http:' || url.protocol === 'https:') && url.host !== '';
}

/** Names eKuiper publishes prebuilt plugins for (default build). */
const PREBUILT: Record<NativeType, readonly string[]> = {
  sources: ['random', 'zmq', 'sql', 'video', 'kafka'],
  sinks: ['image', 'influx', 'influx2', 'tdengine', 'zmq', 'kafka', 'sql'],
  functions: ['accumulateWordCount', 'countPlusOne', 'echo', 'geohash', 'image', 'labelImage', 'tfLite'],
};

const GO_ARCH: Record<string, string> = {
  x64: 'amd64',
  arm64: 'arm64',
  arm: 'arm',
  ia32: '386',
  ppc64: 'ppc64le',
  s390x: 's390x',
  riscv64: 'riscv64',
};

export interface PrebuildEnv {
  platform: string;
  arch: string;
  /** reads /etc/os-release (throws like fs) */
  osRelease: () => string;
}

const HOST_ENV: PrebuildEnv = {
  platform: process.platform,
  arch: process.arch,
  osRelease: () => readFileSync('/etc/os-release', 'utf8'),
};

/** `GET /plugins/{type}/prebuild` (docs/rest-api.md §10.4): name → download URL, computed, nothing fetched. */
export function prebuiltPlugins(
  type: NativeType,
  pluginHosts: string,
  version: string,
  env: PrebuildEnv = HOST_ENV,
): Record<string, string> {
  if (env.platform !== 'linux') {
    throw bad(
      "It's strongly recommended to install plugins at linux. If you choose to proceed to install plugin, please make sure the plugin is already validated in your own build.",
    );
  }
  let release: string;
  try {
    release = env.osRelease();
  } catch (e) {
    throw bad((e as Error).message);
  }
  const pretty = /^PRETTY_NAME=(.*)$/m.exec(release)?.[1] ?? '';
  const os = pretty.toLowerCase().includes('alpine') ? 'alpine' : 'debian';
  const hosts = pluginHosts
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
  if (hosts.length === 0) throw bad('invalid configuration for plugin host in kuiper.yaml');
  const arch = GO_ARCH[env.arch] ?? env.arch;
  const out: Record<string, string> = {};
  for (const host of hosts) {
    for (const name of PREBUILT[type])
      out[name] = `${host}/kuiper-plugins/${version}/${os}/${type}/${name}_${arch}.zip`;
  }
  return out;
}

/** The name checks of a create request (eKuiper's order: name, then URL); the trimmed name. */
export function checkRequest(req: PluginRequest): string {
  const name = req.name.trim();
  if (name === '') throw bad('invalid name : should not be empty');
  if (name === '.' || name === '..' || !/^[A-Za-z0-9_.-]+$/.test(name))
    throw bad(`invalid name ${name}: only letters, digits, '_', '.' and '-' are allowed`);
  const long = idTooLong('invalid name', name);
  if (long) throw bad(long);
  if (!checkUri(req.file)) throw bad(`invalid uri ${req.file}`);
  return name;
}
