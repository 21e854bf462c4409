import { RateLimiterRedis } from 'rate-limiter-flexible';
import { createClient, type RedisClientType } from 'redis';
import { FlexibleRateLimiter } from '../flexible-rate-limiter.ts';

/** The distributed rate limiter: budgets in Redis, so every API and mailer replica shares them. */
export class RedisRateLimiter extends FlexibleRateLimiter {
  readonly #client: RedisClientType;

  private constructor(client: RedisClientType) {
    super((options) => new RateLimiterRedis({ ...options, storeClient: client, useRedisPackage: true }));
    this.#client = client;
  }

  static async connect(url: string): Promise<RedisRateLimiter> {
    const client: RedisClientType = createClient({ url });
    await client.connect();
    return new RedisRateLimiter(client);
  }

  async close(): Promise<void> {
    await this.#client.quit();
  }
}
