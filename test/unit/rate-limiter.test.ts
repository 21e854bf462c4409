import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from '../../adapters/embedded/rate-limiter.ts';

describe('MemoryRateLimiter', () => {
  it('allows `limit` calls, then refuses with retryAfterMs, then allows again after the window', async () => {
    const rl = new MemoryRateLimiter();
    const windowMs = 200;
    for (let i = 0; i < 3; i++) {
      expect(await rl.consume('k', 3, windowMs)).toEqual({ allowed: true, remaining: 2 - i, retryAfterMs: 0 });
    }
    const refused = await rl.consume('k', 3, windowMs);
    expect(refused.allowed).toBe(false);
    expect(refused.remaining).toBe(0);
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(windowMs);

    await sleep(refused.retryAfterMs + 20);
    const deadline = Date.now() + 5_000;
    let again = await rl.consume('k', 3, windowMs);
    while (!again.allowed && Date.now() < deadline) {
      await sleep(10);
      again = await rl.consume('k', 3, windowMs);
    }
    expect(again).toMatchObject({ allowed: true, remaining: 2 });
  });

  it('keeps keys and (limit, window) pairs apart', async () => {
    const rl = new MemoryRateLimiter();
    expect((await rl.consume('a', 1, 10_000)).allowed).toBe(true);
    expect((await rl.consume('a', 1, 10_000)).allowed).toBe(false);
    expect((await rl.consume('b', 1, 10_000)).allowed).toBe(true);
    // Another budget for the same key is a separate counter.
    expect((await rl.consume('a', 5, 10_000)).allowed).toBe(true);
  });

  it('takes several points at once; a refused call spends nothing', async () => {
    const rl = new MemoryRateLimiter();
    expect(await rl.consume('batch', 10, 10_000, 7)).toEqual({ allowed: true, remaining: 3, retryAfterMs: 0 });
    const refused = await rl.consume('batch', 10, 10_000, 5);
    expect(refused.allowed).toBe(false);
    expect(refused.remaining).toBe(3);
    expect(await rl.consume('batch', 10, 10_000, 3)).toEqual({ allowed: true, remaining: 0, retryAfterMs: 0 });
    expect((await rl.consume('batch', 10, 10_000, 1)).allowed).toBe(false);
  });

  it('handles windows that are not whole seconds', async () => {
    const rl = new MemoryRateLimiter();
    expect((await rl.consume('f', 1, 1_500)).allowed).toBe(true);
    const refused = await rl.consume('f', 1, 1_500);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterMs).toBeGreaterThan(1_000);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(1_500);
    expect(Number.isInteger(refused.retryAfterMs)).toBe(true);

    expect((await rl.consume('short', 1, 50)).allowed).toBe(true);
    const shortRefused = await rl.consume('short', 1, 50);
    expect(shortRefused.allowed).toBe(false);
    expect(shortRefused.retryAfterMs).toBeLessThanOrEqual(50);
  });

  it('refuses everything with a limit of 0 and rejects nonsensical arguments', async () => {
    const rl = new MemoryRateLimiter();
    const zero = await rl.consume('z', 0, 1_000);
    expect(zero.allowed).toBe(false);
    expect(zero.retryAfterMs).toBeGreaterThan(0);
    await expect(rl.consume('z', 1, 0)).rejects.toThrow(RangeError);
    await expect(rl.consume('z', 1, Number.NaN)).rejects.toThrow(RangeError);
    await expect(rl.consume('z', -1, 1_000)).rejects.toThrow(RangeError);
  });

  it('peek tells whether a point is left without taking it; reset gives the whole budget back', async () => {
    const rl = new MemoryRateLimiter();
    expect(await rl.peek('p', 2, 10_000)).toEqual({ allowed: true, remaining: 2, retryAfterMs: 0 });
    await rl.consume('p', 2, 10_000);
    expect(await rl.peek('p', 2, 10_000)).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0 });
    expect(await rl.peek('p', 2, 10_000)).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0 }); // peeking took nothing
    await rl.consume('p', 2, 10_000);
    const spent = await rl.peek('p', 2, 10_000);
    expect(spent.allowed).toBe(false);
    expect(spent.remaining).toBe(0);
    expect(spent.retryAfterMs).toBeGreaterThan(0);
    expect(spent.retryAfterMs).toBeLessThanOrEqual(10_000);
    expect((await rl.peek('p', 0, 10_000)).allowed).toBe(false); // a limit of 0 has nothing to give

    await rl.reset('p', 2, 10_000);
    expect(await rl.peek('p', 2, 10_000)).toEqual({ allowed: true, remaining: 2, retryAfterMs: 0 });
    expect(await rl.consume('p', 2, 10_000)).toEqual({ allowed: true, remaining: 1, retryAfterMs: 0 });
    await rl.reset('never-used', 2, 10_000); // nothing to forget is not an error
  });

  it('giveBack returns taken points, never more than were taken', async () => {
    const rl = new MemoryRateLimiter();
    await rl.consume('g', 3, 10_000, 3);
    await rl.giveBack('g', 3, 10_000);
    expect(await rl.peek('g', 3, 10_000)).toMatchObject({ allowed: true, remaining: 1 });
    await rl.giveBack('g', 3, 10_000, 5);
    expect(await rl.peek('g', 3, 10_000)).toMatchObject({ allowed: true, remaining: 3 });
    await rl.giveBack('fresh', 3, 10_000);
    expect(await rl.consume('fresh', 3, 10_000, 3)).toMatchObject({ allowed: true, remaining: 0 });
    expect((await rl.consume('fresh', 3, 10_000)).allowed).toBe(false);
  });
});
