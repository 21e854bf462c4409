import { join } from 'node:path';
import { EmbeddedActorHost } from '../adapters/embedded/actor-host.ts';
import { EmbeddedPubSub } from '../adapters/embedded/pubsub.ts';
import { MemoryRateLimiter } from '../adapters/embedded/rate-limiter.ts';
import { EmbeddedStore } from '../adapters/embedded/store.ts';
import type { Config } from './config.ts';
import type { Adapters } from './boot.ts';

/** Embedded mode: every port in this process, persisted under DATA_DIR. */
export async function embeddedAdapters(config: Config): Promise<Adapters> {
  const store = await EmbeddedStore.open(join(config.dataDir, 'store'));
  return {
    store,
    actors: new EmbeddedActorHost(store),
    pubsub: new EmbeddedPubSub(store),
    limiter: new MemoryRateLimiter(),
  };
}
