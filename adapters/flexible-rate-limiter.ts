/**
 * Fixed-window budgets through rate-limiter-flexible, whatever its store: memory (embedded) or
 * Redis (distributed, shared by every replica). One library limiter per (limit, windowMs) pair,
 * created on first use and kept; callers use a small, fixed set of limits.
 *
 * A key's window starts at its first consume and lasts `windowMs`; the budget resets when it
 * ends. `windowMs` may be any positive number of milliseconds, including below one second and
 * non-integer seconds: rate-limiter-flexible counts `duration` in seconds but multiplies back to
 * milliseconds without rounding, so `windowMs / 1000` is exact enough.
 * `retryAfterMs` is rounded up to a whole millisecond (at least 1 when refused).
 *
 * A refused call takes nothing from the budget: a request for more points than are left does
 * not use up what is left (rate-limiter-flexible would count it; we give the points back).
 */
import { RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import type { RateDecision, RateLimiter } from '../ports/rate-limiter.ts';

/** Creates the library's limiter for one (limit, window) pair; `duration` is in seconds. */
export type LimiterFactory = (options: { points: number; duration: number; keyPrefix: string }) => RateLimiterAbstract;

export class FlexibleRateLimiter implements RateLimiter {
  readonly #limiters = new Map<string, RateLimiterAbstract>();
  readonly #create: LimiterFactory;

  constructor(create: LimiterFactory) {
    this.#create = create;
  }

  async consume(key: string, limit: number, windowMs: number, points = 1): Promise<RateDecision> {
    if (!Number.isFinite(points) || points < 0) throw new RangeError(`points must be a non-negative number, got ${points}`);
    const limiter = this.#limiter(limit, windowMs);
    try {
      const res = await limiter.consume(key, points);
      return { allowed: true, remaining: res.remainingPoints, retryAfterMs: 0 };
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      // Refused: give the points back so a refused request does not spend the budget.
      const after = points > 0 ? await limiter.reward(key, points) : err;
      // The window ended between the two calls, so the reward opened a new one below zero: undo.
      if (after.consumedPoints < 0) await limiter.delete(key);
      return {
        allowed: false,
        remaining: Math.max(0, Math.min(after.remainingPoints, limit)),
        retryAfterMs: Math.max(1, Math.ceil(Math.min(err.msBeforeNext, windowMs))),
      };
    }
  }

  async peek(key: string, limit: number, windowMs: number): Promise<RateDecision> {
    const res = await this.#limiter(limit, windowMs).get(key);
    const live = res && res.msBeforeNext > 0 ? res : null; // an ended window holds nothing
    const used = live?.consumedPoints ?? 0;
    if (used < limit) return { allowed: true, remaining: limit - used, retryAfterMs: 0 };
    return { allowed: false, remaining: 0, retryAfterMs: Math.max(1, Math.ceil(Math.min(live?.msBeforeNext ?? windowMs, windowMs))) };
  }

  async giveBack(key: string, limit: number, windowMs: number, points = 1): Promise<void> {
    if (!Number.isFinite(points) || points < 0) throw new RangeError(`points must be a non-negative number, got ${points}`);
    const limiter = this.#limiter(limit, windowMs);
    const after = await limiter.reward(key, points);
    // Nothing (or less than `points`) was taken in this window: an empty budget is a full one.
    if (after.consumedPoints <= 0) await limiter.delete(key);
  }

  async reset(key: string, limit: number, windowMs: number): Promise<void> {
    await this.#limiter(limit, windowMs).delete(key);
  }

  #limiter(limit: number, windowMs: number): RateLimiterAbstract {
    if (!Number.isFinite(limit) || limit < 0) throw new RangeError(`rate limit must be a non-negative number, got ${limit}`);
    if (!Number.isFinite(windowMs) || windowMs <= 0) throw new RangeError(`rate window must be positive, got ${windowMs} ms`);
    const cacheKey = `${limit}/${windowMs}`;
    let limiter = this.#limiters.get(cacheKey);
    if (!limiter) {
      limiter = this.#create({ points: limit, duration: windowMs / 1000, keyPrefix: `rl:${cacheKey}` });
      this.#limiters.set(cacheKey, limiter);
    }
    return limiter;
  }
}
