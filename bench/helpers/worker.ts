/**
 * The child side of bench/helpers/procs.ts: `eddy <env json>` runs an Eddy server on a fresh home; `hand-filter
 * <in> <out>` runs the hand-written mqtt.js program. Both answer `{cmd:'cpu'}` with their CPU µs and exit on
 * `{cmd:'stop'}`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { startServer } from '../../src/server.js';

type Msg = { cmd: string; seq: number } & Record<string, unknown>;

async function main(): Promise<void> {
  const kind = process.argv[2];
  let close: () => Promise<void>;
  if (kind === 'eddy') {
    const home = mkdtempSync(join(tmpdir(), 'eddy-bench-'));
    const env: Record<string, string> = {
      KUIPER__BASIC__RESTIP: '127.0.0.1',
      KUIPER__BASIC__RESTPORT: '0',
      KUIPER__BASIC__CONSOLELOG: 'false',
      KUIPER__BASIC__FILELOG: 'false',
      KUIPER__SOURCE__HTTPSERVERIP: '127.0.0.1',
      KUIPER__SOURCE__HTTPSERVERPORT: '0',
      ...(JSON.parse(process.argv[3] ?? '{}') as Record<string, string>),
    };
    const server = await startServer({ home, env });
    close = async () => {
      await server.close();
      rmSync(home, { recursive: true, force: true });
    };
    process.send?.({ url: server.url });
  } else if (kind === 'hand-filter') {
    const [inTopic, outTopic] = process.argv.slice(3);
    const c = await mqtt.connectAsync('mqtt://127.0.0.1:1883');
    c.on('message', (_t, payload) => {
      const row = JSON.parse(payload.toString()) as { temperature: number };
      if (row.temperature > 50) c.publish(outTopic, JSON.stringify([row]));
    });
    await c.subscribeAsync(inTopic, { qos: 0 });
    close = () => c.endAsync();
    process.send?.({ ready: true });
  } else {
    throw new Error(`unknown worker ${kind}`);
  }
  process.on('message', (m: Msg) => {
    if (m.cmd === 'cpu') {
      const u = process.cpuUsage();
      process.send?.({ seq: m.seq, value: u.user + u.system });
    } else if (m.cmd === 'stop') {
      void close().finally(() => process.exit(0));
    }
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
