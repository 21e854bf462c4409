import type { Logger } from 'pino';
import type { RedisClientType } from 'redis';
import { connectRedis } from './client.ts';

const CHANNEL = 'mailroom:store:changed';

/**
 * Tells every replica that a collection whose reads they cache (`cacheReads`) was written, over a
 * Redis channel. Pub/sub is at most once: a replica that was disconnected hears `resync` when it
 * is back, and the caches keep answers only briefly anyway (adapters/mongo/store.ts).
 */
export class RedisStoreChanges {
  readonly #publisher: RedisClientType;
  readonly #subscriber: RedisClientType;

  private constructor(publisher: RedisClientType, subscriber: RedisClientType) {
    this.#publisher = publisher;
    this.#subscriber = subscriber;
  }

  /** `changed(collection)` on every message; `resync()` when the subscription is back after a drop. */
  static async connect(
    url: string,
    listener: { changed(collection: string): void; resync(): void },
    log: Pick<Logger, 'warn' | 'info'>,
  ): Promise<RedisStoreChanges> {
    const [publisher, subscriber] = await Promise.all([connectRedis(url, log, 'store changes'), connectRedis(url, log, 'store changes subscriber')]);
    let connected = true;
    subscriber.on('end', () => (connected = false));
    subscriber.on('reconnecting', () => (connected = false));
    subscriber.on('ready', () => {
      if (!connected) listener.resync();
      connected = true;
    });
    await subscriber.subscribe(CHANNEL, (collection) => listener.changed(collection));
    return new RedisStoreChanges(publisher, subscriber);
  }

  async publish(collection: string): Promise<void> {
    await this.#publisher.publish(CHANNEL, collection);
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.#subscriber.quit(), this.#publisher.quit()]);
  }
}
