import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { EmbeddedActorHost } from '../../adapters/embedded/actor-host.ts';
import { EmbeddedPubSub } from '../../adapters/embedded/pubsub.ts';
import { MemoryRateLimiter } from '../../adapters/embedded/rate-limiter.ts';
import { FileBlobStore } from '../../adapters/files/blobs.ts';
import { SqliteStore, type SqliteStoreOptions } from '../../adapters/sqlite/store.ts';
import { loadConfig } from '../../runtime/config.ts';
import type { Platform } from '../../runtime/platform.ts';

/** The embedded store as `npm start` opens it, in `dir` (a test's temporary directory). */
export const openStore = (dir: string, options?: SqliteStoreOptions): Promise<SqliteStore> => SqliteStore.open(join(dir, 'mailroom.db'), options);

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
