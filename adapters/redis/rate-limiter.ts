import type { Logger } from 'pino';
import { RateLimiterRedis } from 'rate-limiter-flexible';
import type { RedisClientType } from 'redis';
import { FlexibleRateLimiter } from '../flexible-rate-limiter.ts';
import { connectRedis } from './client.ts';

/** The distributed rate limiter: budgets in Redis, so every API and mailer replica shares them. */
export class RedisRateLimiter extends FlexibleRateLimiter {
  readonly #client: RedisClientType;

  private constructor(client: RedisClientType) {
    super((options) => new RateLimiterRedis({ ...options, storeClient: client, useRedisPackage: true }));
    this.#client = client;
  }

  static async connect(url: string, log: Pick<Logger, 'warn' | 'info'>): Promise<RedisRateLimiter> {
    return new RedisRateLimiter(await connectRedis(url, log, 'rate limiter'));
  }

  async close(): Promise<void> {
    await this.#client.quit();
  }
}
