import type { Logger } from 'pino';
import type { ActorRuntime } from '../ports/actors.ts';
import type { BlobStore } from '../ports/blobs.ts';
import type { PubSub } from '../ports/pubsub.ts';
import type { RateLimiter } from '../ports/rate-limiter.ts';
import type { DocumentStore } from '../ports/store.ts';
import type { Config } from './config.ts';
import type { Metrics } from './metrics.ts';

/** Everything domain code may use: the five ports, the configuration, the logger and the metrics. */
export interface Platform {
  config: Config;
  store: DocumentStore;
  actors: ActorRuntime;
  pubsub: PubSub;
  limiter: RateLimiter;
  /** Raw inbound messages, kept for INBOUND_RAW_RETENTION_DAYS. */
  blobs: BlobStore;
  log: Logger;
  /** Set by boot(); absent in unit tests that build a platform by hand. */
  metrics?: Metrics;
}
