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
  /** Whether `key` has a point left now (`remaining`: how many), without taking one. */
  peek(key: string, limit: number, windowMs: number): Promise<RateDecision>;
  /** Gives `points` (default 1) taken from `key`'s budget back, never beyond the whole budget. */
  giveBack(key: string, limit: number, windowMs: number, points?: number): Promise<void>;
  /** Gives `key` its whole budget back (a new window starts at its next consume). */
  reset(key: string, limit: number, windowMs: number): Promise<void>;
}
