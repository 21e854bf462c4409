/**
 * The rate limiter port: fixed-window budgets by key. Embedded: in memory;
 * distributed: Redis, so every replica draws from the same budget.
 */
export interface RateDecision {
  allowed: boolean;
  /** Points left in the current window after this call. */
  remaining: number;
  /** When not allowed: milliseconds until the window resets. */
  retryAfterMs: number;
}

export interface RateLimiter {
  /** Takes `points` (default 1) from `key`'s budget of `limit` per `windowMs`. */
  consume(key: string, limit: number, windowMs: number, points?: number): Promise<RateDecision>;
}
