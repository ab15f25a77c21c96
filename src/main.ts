#!/usr/bin/env node
/** `npm start`: serve the REST API from the home folder (EDDY_HOME, default the current folder). */
import v8 from 'node:v8';
import { startServer } from './server.js';

// SQL regular expressions run on RE2 (re2js); the regex functions of sink data templates still use JavaScript's
// engine: let V8 fall back to its linear-time engine when such a pattern backtracks excessively.
v8.setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks');

const server = await startServer().catch((err: unknown) => {
  console.error(`eddy: cannot start: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
console.log(`Eddy is serving the REST API on ${server.url} (home ${server.app.home.root})`);

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
