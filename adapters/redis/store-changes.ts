import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { RedisClientType } from 'redis';
import { connectRedis } from './client.ts';

/** `<collection> <write id>`: a replica clears its answers for the collection, then says so. */
const CHANNEL = 'mailroom:store:changed';
/** `<write id>`, once from each replica that has cleared. */
const CLEARED = 'mailroom:store:cleared';
/** How long a write waits for the replicas to say they cleared. */
const CLEARED_WAIT_MS = 1_000;

/** A write waiting to hear that every replica subscribed when it was published has cleared. */
interface Waiting {
  cleared: number;
  receivers?: number;
  done(): void;
}

/**
 * Tells every replica that a collection whose reads they cache (`cacheReads`) was written, over a
 * Redis channel, and waits until each has cleared its answers: Redis's PUBLISH returns once the
 * message is queued to the subscribers, not once they have read it, so a replica could still
 * answer a request from its cache after the writer had answered (a key rotated on one replica,
 * accepted for a moment by another). Each replica acknowledges on a second channel; PUBLISH says
 * how many there are to wait for. Pub/sub is at most once: a replica that was disconnected hears
 * `resync` when it is back, and the caches keep answers only briefly anyway
 * (adapters/mongo/store.ts), which also bounds a writer's wait for a replica that never answers.
 */
export class RedisStoreChanges {
  readonly #publisher: RedisClientType;
  readonly #subscriber: RedisClientType;
  readonly #waiting = new Map<string, Waiting>();

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
    const changes = new RedisStoreChanges(publisher, subscriber);
    let connected = true;
    subscriber.on('end', () => (connected = false));
    subscriber.on('reconnecting', () => (connected = false));
    subscriber.on('ready', () => {
      if (!connected) listener.resync();
      connected = true;
    });
    await subscriber.subscribe(CLEARED, (id) => changes.#heard(id));
    await subscriber.subscribe(CHANNEL, (message) => {
      const [collection, id] = message.split(' ');
      listener.changed(collection);
      if (id) publisher.publish(CLEARED, id).catch(() => undefined); // the writer's wait is bounded
    });
    return changes;
  }

  /**
   * Resolves once every replica subscribed (this one too) has cleared its answers for `collection`,
   * or after `CLEARED_WAIT_MS` whatever happens: with Redis away, or a replica that does not answer,
   * the others' answers expire on their own.
   */
  async publish(collection: string): Promise<void> {
    const id = randomUUID();
    const waiting: Waiting = { cleared: 0, done: () => undefined };
    const everyone = new Promise<void>((done) => (waiting.done = done));
    this.#waiting.set(id, waiting);
    const timer = setTimeout(() => waiting.done(), CLEARED_WAIT_MS).unref();
    try {
      const published = this.#publisher.publish(CHANNEL, `${collection} ${id}`).then((receivers) => {
        waiting.receivers = receivers;
        if (waiting.cleared >= receivers) waiting.done(); // every answer came before PUBLISH's
      });
      published.catch(() => waiting.done());
      await everyone;
    } finally {
      clearTimeout(timer);
      this.#waiting.delete(id);
    }
  }

  #heard(id: string): void {
    const waiting = this.#waiting.get(id);
    if (!waiting) return; // another replica's write, or one that stopped waiting
    waiting.cleared++;
    if (waiting.receivers !== undefined && waiting.cleared >= waiting.receivers) waiting.done();
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.#subscriber.quit(), this.#publisher.quit()]);
  }
}
