import { RateLimiterMemory } from 'rate-limiter-flexible';
import { FlexibleRateLimiter } from '../flexible-rate-limiter.ts';

/** The embedded rate limiter: budgets in this process's memory. */
export class MemoryRateLimiter extends FlexibleRateLimiter {
  constructor() {
    super((options) => new RateLimiterMemory(options));
  }
}
