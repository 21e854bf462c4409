import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { pino } from 'pino';
import { contactActor } from '../../actors/contact/actor.ts';
import { EmbeddedActorHost } from '../../adapters/embedded/actor-host.ts';
import { EmbeddedPubSub } from '../../adapters/embedded/pubsub.ts';
import { MemoryRateLimiter } from '../../adapters/embedded/rate-limiter.ts';
import { FileBlobStore } from '../../adapters/files/blobs.ts';
import { SqliteStore, type SqliteStoreOptions } from '../../adapters/sqlite/store.ts';
import { loadConfig } from '../../runtime/config.ts';
import type { Platform } from '../../runtime/platform.ts';

/** The embedded store as `npm start` opens it, in `dir` (a test's temporary directory). */
export const openStore = (dir: string, options?: SqliteStoreOptions): Promise<SqliteStore> => SqliteStore.open(join(dir, 'mailroom.db'), options);

/**
 * What is committed in the store in `dir` (as openStore opens it), read through a second,
 * read-only connection: what a process restarted after a crash would find. `ids(table)` is []
 * while the table itself is not committed.
 */
export function committedRows(dir: string): { ids(table: string): string[]; close(): void } {
  const db = new DatabaseSync(join(dir, 'mailroom.db'), { readOnly: true });
  return {
    ids(table) {
      try {
        return (db.prepare(`SELECT id FROM "${table}" ORDER BY id`).all() as { id: string }[]).map((row) => row.id);
      } catch {
        return []; // the table itself is not committed yet
      }
    },
    close: () => db.close(),
  };
}

/** The embedded platform's adapters on `store`, for domain functions called without HTTP (config from `env`, logs silent). */
export const embeddedPlatform = (store: SqliteStore, env: NodeJS.ProcessEnv = {}): Platform => ({
  config: loadConfig(env),
  store,
  actors: new EmbeddedActorHost(store),
  pubsub: new EmbeddedPubSub(store),
  limiter: new MemoryRateLimiter(),
  blobs: new FileBlobStore(join(env.DATA_DIR ?? tmpdir(), 'blobs')),
  log: pino({ level: 'silent' }),
});

/**
 * An embedded platform with the contact actor, on a store in a new temporary directory, started
 * (after `setUp`, for subscriptions and data); `stop` stops it and removes the directory.
 */
export async function contactPlatform(setUp?: (p: Platform) => Promise<void>): Promise<{ p: Platform; stop: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-contact-'));
  const store = await openStore(dir);
  const p = embeddedPlatform(store);
  p.actors.register(contactActor(p));
  await setUp?.(p);
  await p.actors.start();
  await p.pubsub.start();
  const stop = async () => {
    await p.pubsub.stop();
    await p.actors.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  };
  return { p, stop };
}
