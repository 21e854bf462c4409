import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { typescriptArgs } from '../../runtime/node-typescript.ts';
import { openStore } from '../harness/store.ts';

// `npm run backup -- <file>` (scripts/backup.ts) against a store that is open and being written,
// as it is while mailroom runs; the restore is the README's: the file in place of mailroom.db.

const root = path.resolve(import.meta.dirname, '../..');
let dir: string;
let store: SqliteStore;

function backup(dataDir: string, ...args: string[]) {
  return spawnSync(process.execPath, [...typescriptArgs, 'scripts/backup.ts', ...args], {
    cwd: root,
    env: { ...process.env, DATA_DIR: dataDir },
    encoding: 'utf8',
  });
}

beforeEach(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-backup-'));
  store = await openStore(path.join(dir, 'data'));
});

afterEach(async () => {
  await store.close().catch(() => undefined);
  await fs.promises.rm(dir, { recursive: true, force: true });
});

describe('npm run backup', () => {
  it('copies every acknowledged write of a live store, and the copy restores', async () => {
    const contacts = store.collection('contacts');
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }]);
    for (let i = 0; i < 50; i++) await contacts.insertOne({ _id: `c${i}`, projectId: 'p1', email: `c${i}@example.com` });
    await contacts.updateOne({ _id: 'c7' }, { $set: { name: 'Seven' } });
    await contacts.deleteOne({ _id: 'c9' });
    // A write left uncommitted in the open transaction is not acknowledged, and not in the copy.
    const pending = contacts.insertOne({ _id: 'late', projectId: 'p1', email: 'late@example.com' });

    const file = path.join(dir, 'backup.db');
    const result = backup(path.join(dir, 'data'), file);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/backed up .*mailroom\.db to .*backup\.db/);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    await pending;

    // Restore: the copy as mailroom.db of a new DATA_DIR.
    const restoredDir = path.join(dir, 'restored');
    fs.mkdirSync(restoredDir);
    fs.copyFileSync(file, path.join(restoredDir, 'mailroom.db'));
    const restored = await openStore(restoredDir);
    try {
      const docs = await restored.collection('contacts').find({}, { sort: { _id: 1 } });
      expect(docs.map((doc) => doc._id)).toEqual(
        Array.from({ length: 50 }, (_, i) => `c${i}`)
          .filter((id) => id !== 'c9')
          .sort(),
      );
      expect(await restored.collection('contacts').findOne({ _id: 'c7' })).toMatchObject({ name: 'Seven' });
      // The index came along: a duplicate is still refused.
      await restored.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }]);
      await expect(restored.collection('contacts').insertOne({ _id: 'dup', projectId: 'p1', email: 'c1@example.com' })).rejects.toThrow(/duplicate/);
    } finally {
      await restored.close();
    }
  });

  it('never overwrites a file, and says how to call it', async () => {
    const file = path.join(dir, 'taken.db');
    fs.writeFileSync(file, 'precious');
    const taken = backup(path.join(dir, 'data'), file);
    expect(taken.status).toBe(1);
    expect(taken.stderr).toMatch(/never overwrites/);
    expect(fs.readFileSync(file, 'utf8')).toBe('precious');

    const usage = backup(path.join(dir, 'data'));
    expect(usage.status).toBe(2);
    expect(usage.stderr).toMatch(/usage: npm run backup -- <file>/);

    const missing = backup(path.join(dir, 'nowhere'), path.join(dir, 'x.db'));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/no database/);
  });
});
