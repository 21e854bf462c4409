import { join } from 'node:path';
import type { Logger } from 'pino';
import { EmbeddedActorHost } from '../adapters/embedded/actor-host.ts';
import { EmbeddedPubSub } from '../adapters/embedded/pubsub.ts';
import { MemoryRateLimiter } from '../adapters/embedded/rate-limiter.ts';
import { FileBlobStore } from '../adapters/files/blobs.ts';
import { SqliteStore } from '../adapters/sqlite/store.ts';
import type { Config } from './config.ts';
import type { Adapters } from './boot.ts';

/** The embedded store's database file under DATA_DIR (its WAL sits beside it). */
export const databaseFile = (config: Pick<Config, 'dataDir'>): string => join(config.dataDir, 'mailroom.db');

/** Embedded mode: every port in this process, persisted in one SQLite database under DATA_DIR. */
export async function embeddedAdapters(config: Config, log: Logger): Promise<Adapters> {
  const store = await SqliteStore.open(databaseFile(config), { cacheMb: config.sqliteCacheMb });
  // Data of versions before SQLite: DATA_DIR/store/store.journal, imported on the first start.
  const journalDir = join(config.dataDir, 'store');
  const imported = store.importJournal(journalDir);
  if (imported !== undefined) log.info({ lines: imported, from: journalDir }, 'imported the journal store into SQLite; the journal files are kept');
  const pubsub = new EmbeddedPubSub(store);
  // A failed commit undid the records its copies were made of.
  store.database.onRollback(() => pubsub.dropCopies());
  return {
    store,
    actors: new EmbeddedActorHost(store),
    pubsub,
    limiter: new MemoryRateLimiter(),
    blobs: new FileBlobStore(join(config.dataDir, 'blobs')),
  };
}
