#!/usr/bin/env node
/** `npm start`: serve the REST API from the home folder (EDDY_HOME, default the current folder). */
import { holdYoungGeneration, releaseYoungGeneration } from './core/young-generation.js';

// before the server's modules load: parsing them would grow the main thread's young generation for good
holdYoungGeneration();
const { startServer } = await import('./server.js');
const { startupBanner } = await import('./banner.js');

const server = await startServer().catch((err: unknown) => {
  console.error(`eddy: cannot start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
// with `basic.workers: none` the rules run on this thread: its young generation may grow for their throughput
if (!server.app.workers) releaseYoungGeneration();
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
