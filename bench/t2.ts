import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../src/server.js';
const home = mkdtempSync(join(tmpdir(), 'eddy-prof-'));
const server = await startServer({ home, env: { KUIPER__BASIC__RESTIP: '127.0.0.1', KUIPER__BASIC__RESTPORT: '0', KUIPER__BASIC__CONSOLELOG: 'false', KUIPER__BASIC__FILELOG: 'false', KUIPER__SOURCE__HTTPSERVERPORT: '0', ...JSON.parse(process.argv[3] ?? '{}') } });
const url = server.url;
const req = async (m: string, p: string, b?: unknown) => { const r = await fetch(url + p, { method: m, body: b === undefined ? undefined : JSON.stringify(b) }); return { status: r.status, text: await r.text() }; };
const n = Number(process.argv[2] ?? 500);
let t0 = Date.now();
async function par(fn: (i: number) => Promise<unknown>) { let next = 0; await Promise.all(Array.from({ length: 8 }, async () => { for (let i = next++; i < n; i = next++) await fn(i); })); }
await par((i) => req('POST', '/streams', { sql: `CREATE STREAM s${i} () WITH (DATASOURCE="x/in/${i}", FORMAT="json")` }));
console.log('streams', Date.now() - t0); t0 = Date.now();
const c0 = process.cpuUsage();
await par((i) => req('POST', '/rules', { id: `r${i}`, sql: `SELECT * FROM s${i} WHERE temperature > 50`, actions: [{ mqtt: { server: 'tcp://127.0.0.1:1883', topic: `x/out/${i}` } }] }));
console.log('rules posted', Date.now() - t0);
for (;;) { const l = JSON.parse((await req('GET', '/rules')).text) as Array<{status:string}>; const run = l.filter(r => r.status === 'Running').length; if (run === n) break; await new Promise(r => setTimeout(r, 200)); }
const c1 = process.cpuUsage(c0);
console.log('all running', Date.now() - t0, 'cpu ms', (c1.user + c1.system) / 1000);
await server.close();
process.exit(0);
