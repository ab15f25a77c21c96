#!/usr/bin/env node
/** `npm start`: serve the REST API from the home folder (EDDY_HOME, default the current folder). */
import { startServer } from './server.js';
import { startupBanner } from './banner.js';

const server = await startServer().catch((err: unknown) => {
  console.error(`eddy: cannot start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
for (const line of startupBanner(server)) console.log(line);

let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    if (stopping) return;
    stopping = true;
    server
      .close()
      .then(() => process.exit(0))
      .catch(() => process.exit(1));
  });
}
