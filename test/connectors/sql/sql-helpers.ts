/** Shared pieces of the sql connector tests: the database urls, plain admin clients, unique tables, a cuttable proxy. */
import { createServer, connect, type Socket, type AddressInfo } from 'node:net';
import pg from 'pg';
import mysql from 'mysql2/promise';

export const PG_URL = 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable';
export const MY_URL = 'mysql://root:@127.0.0.1:3306/test';

/** A plain client of one of the two databases, to prepare and check tables independently of Eddy. */
export interface Admin {
  run(sql: string): Promise<Record<string, unknown>[]>;
  close(): Promise<void>;
}

export async function admin(driver: 'postgres' | 'mysql'): Promise<Admin> {
  if (driver === 'postgres') {
    const c = new pg.Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' });
    await c.connect();
    return { run: async (sql) => (await c.query(sql)).rows as Record<string, unknown>[], close: () => c.end() };
  }
  const c = await mysql.createConnection({
    host: '127.0.0.1',
    port: 3306,
    user: 'root',
    password: '',
    database: 'test',
    supportBigNumbers: true,
    bigNumberStrings: true,
    dateStrings: true,
  });
  return { run: async (sql) => (await c.query(sql))[0] as Record<string, unknown>[], close: () => c.end() };
}

export const uniqueTable = (what: string): string =>
  `eddy_${what}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;

/** A TCP proxy to a database that the test can cut and restore (an outage as the client sees it). */
export async function cuttableProxy(
  target: number,
): Promise<{ port: number; cut: () => void; restore: () => Promise<void>; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const make = () =>
    createServer((client) => {
      const upstream = connect(target, '127.0.0.1');
      sockets.add(client).add(upstream);
      client.pipe(upstream).pipe(client);
      const end = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on('error', end).on('close', end);
      upstream.on('error', end).on('close', end);
    });
  let server = make();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const closeServer = () => new Promise<void>((r) => server.close(() => r()));
  return {
    port,
    cut: () => {
      void closeServer();
      for (const s of sockets) s.destroy();
    },
    restore: async () => {
      server = make();
      await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await closeServer().catch(() => undefined);
    },
  };
}
