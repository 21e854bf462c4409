import type { Logger } from 'pino';
import type { ActorRuntime } from '../ports/actors.ts';
import type { PubSub } from '../ports/pubsub.ts';
import type { RateLimiter } from '../ports/rate-limiter.ts';
import type { DocumentStore } from '../ports/store.ts';
import type { Config } from './config.ts';

/** Everything domain code may use: the four ports, the configuration and the logger. */
export interface Platform {
  config: Config;
  store: DocumentStore;
  actors: ActorRuntime;
  pubsub: PubSub;
  limiter: RateLimiter;
  log: Logger;
}
