/**
 * Crash-atomic full import with the Redis store (the scenario: test/helpers/import-crash.ts), against the real server
 * in a database this test owns, flushed before and after.
 */
import { test } from 'node:test';
import { Redis } from 'ioredis';
import { killDuringImport } from '../helpers/import-crash.js';

const REDIS_DB = 12;

test('kill -9 during a full import with the Redis store: the old data or the new, never a mix', async () => {
  const raw = new Redis({ host: '127.0.0.1', port: 6379, db: REDIS_DB });
  await raw.flushdb();
  try {
    await killDuringImport({ KUIPER__STORE__TYPE: 'redis', KUIPER__STORE__REDIS__DB: String(REDIS_DB) });
  } finally {
    await raw.flushdb();
    await raw.quit();
  }
});
