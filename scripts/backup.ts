/**
 * `npm run backup -- <file>`: an online backup of the embedded store, taken while mailroom runs.
 *
 * SQLite's `VACUUM INTO` writes a consistent copy of the database (one read transaction, so every
 * write acknowledged before it started is in it, and none of those after) into a new, compacted
 * file; the running process is not paused. Restore: stop mailroom, put the file in place of
 * `DATA_DIR/mailroom.db`, delete `mailroom.db-wal` and `mailroom.db-shm` beside it, start again.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { loadConfig } from '../runtime/config.ts';
import { databaseFile } from '../runtime/embedded.ts';

const target = process.argv[2];
if (!target || process.argv.length > 3 || target.startsWith('-')) {
  console.error('usage: npm run backup -- <file>   (an online copy of DATA_DIR/mailroom.db; the file must not exist)');
  process.exit(2);
}
const source = databaseFile(loadConfig());
if (!fs.existsSync(source)) {
  console.error(`no database at ${source}: is DATA_DIR right?`);
  process.exit(1);
}
if (fs.existsSync(target)) {
  console.error(`${target} exists: a backup never overwrites a file`);
  process.exit(1);
}

const started = Date.now();
const db = new DatabaseSync(source);
try {
  db.exec('PRAGMA busy_timeout = 10000');
  db.prepare('VACUUM INTO ?').run(path.resolve(target));
} finally {
  db.close();
}
fs.chmodSync(target, 0o600);
const mb = (fs.statSync(target).size / 1024 / 1024).toFixed(1);
console.log(`backed up ${source} to ${target} (${mb} MiB in ${Date.now() - started} ms)`);
