/**
 * The lines `eddy start` prints once the REST API listens: where to reach it and the data server, which home, which
 * store, and where the logs go — the addresses actually bound, not the configured wildcard.
 */
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import type { EddyServer } from './server.js';

/** Every address a wildcard host can be reached on (loopback first); a concrete host is itself. */
export function reachableHosts(host: string): string[] {
  if (host !== '0.0.0.0' && host !== '::' && host !== '') return [host];
  const v4 = host !== '::';
  const out: string[] = [];
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.family === 'IPv4') out.push(a.address);
      else if (!v4 && !a.address.startsWith('fe80')) out.push(`[${a.address}]`);
    }
  }
  return out.sort((a, b) => Number(b.startsWith('127.')) - Number(a.startsWith('127.')));
}

export function startupBanner(server: EddyServer): string[] {
  const { config, home, connectors } = server.app;
  const restPort = new URL(server.url).port;
  const scheme = config.basic.restTls?.certfile ? 'https' : 'http';
  const rest = reachableHosts(config.basic.restIp).map((h) => `${scheme}://${h}:${restPort}`);
  const ds = connectors.dataServer;
  const dsPort = ds.port ?? Number(config.source.httpServerPort);
  const dsUrls = reachableHosts(config.source.httpServerIp).map(
    (h) => `http://${h}:${dsPort === 0 ? '<any free port>' : dsPort}`,
  );
  const cluster = server.app.cluster;
  const store = cluster
    ? `cluster ${cluster.describe()}`
    : config.store?.type === 'redis'
      ? `redis ${config.store.redis.host}:${config.store.redis.port} db ${config.store.redis.db ?? 0}`
      : `sqlite ${join(home.data, config.store?.sqlite?.name || 'sqliteKV.db')}`;
  const logs = [
    config.basic.consoleLog ? 'console' : '',
    config.basic.fileLog ? join(home.log, 'stream.log') : '',
  ].filter((l) => l !== '');
  return [
    `Eddy is serving the REST API on ${rest.join(', ')}`,
    `  web console  ${rest[0]}/console/`,
    `  data server  ${dsUrls.join(', ')} (httppush streams, websocket endpoints; ${ds.listening ? 'listening' : 'opens when a stream needs it'})`,
    `  home         ${home.root}`,
    `  store        ${store}`,
    `  logs         ${logs.length > 0 ? logs.join(' and ') : 'off (basic.consoleLog and basic.fileLog are both false)'}`,
    ...server.app.notices.map((n) => `warning: ${n}`),
  ];
}
