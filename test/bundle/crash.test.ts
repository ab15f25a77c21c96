/** Crash-atomic full import with the SQLite store (the scenario: test/helpers/import-crash.ts). */
import { test } from 'node:test';
import { killDuringImport } from '../helpers/import-crash.js';

test('kill -9 during a full import leaves the old data or the new, and the status says the import was interrupted', () =>
  killDuringImport({}));
