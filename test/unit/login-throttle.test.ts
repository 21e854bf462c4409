import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryRateLimiter } from '../../adapters/embedded/rate-limiter.ts';
import { ACCOUNT_TIERS, ADDRESS_TIERS, admitLoginAttempt, clientNetwork, forgetFailedLogins } from '../../domain/accounts/login-throttle.ts';
import { AppError } from '../../domain/errors.ts';
import type { Platform } from '../../runtime/platform.ts';

const platform = () => ({ limiter: new MemoryRateLimiter() }) as unknown as Platform;

/** The attempt's 429, or undefined when it was admitted. */
async function refusalOf(p: Platform, email: string, ip: string): Promise<AppError | undefined> {
  try {
    await admitLoginAttempt(p, email, ip);
    return undefined;
  } catch (err) {
    if (err instanceof AppError && err.code === 'RATE_LIMIT_EXCEEDED') return err;
    throw err;
  }
}

/** `n` admitted attempts that fail (the password check is not part of the throttle). */
async function fail(p: Platform, n: number, email: string, ip: (i: number) => string = () => '192.0.2.1'): Promise<void> {
  for (let i = 0; i < n; i++) expect(await refusalOf(p, email, ip(i)), `attempt ${i + 1}`).toBeUndefined();
}

describe('login throttle', () => {
  afterEach(() => vi.useRealTimers());

  it('the attempt after 5 failures at one account is refused for at most a minute, and a refused attempt does not lengthen it', async () => {
    const p = platform();
    await fail(p, ACCOUNT_TIERS[0]!.attempts, 'a@example.com', (i) => `192.0.2.${i + 1}`); // each from its own address
    const refused = await refusalOf(p, 'a@example.com', '198.51.100.9');
    expect(refused?.statusCode).toBe(429);
    expect(refused?.retryAfter).toBeGreaterThan(0);
    expect(refused?.retryAfter).toBeLessThanOrEqual(60);
    for (let i = 0; i < 20; i++) expect((await refusalOf(p, 'a@example.com', '198.51.100.9'))?.retryAfter).toBeLessThanOrEqual(60);
    // Another account from the same addresses is not affected.
    expect(await refusalOf(p, 'b@example.com', '192.0.2.1')).toBeUndefined();
  });

  it('the wait grows with the failures: after 10 in a quarter of an hour it lasts up to 15 minutes', async () => {
    vi.useFakeTimers({ now: Date.parse('2026-11-24T10:00:00.000Z') });
    const p = platform();
    await fail(p, 5, 'grow@example.com');
    expect((await refusalOf(p, 'grow@example.com', '192.0.2.1'))?.retryAfter).toBeLessThanOrEqual(60);
    vi.advanceTimersByTime(61_000);
    await fail(p, 5, 'grow@example.com');
    const longer = await refusalOf(p, 'grow@example.com', '192.0.2.1');
    expect(longer?.retryAfter).toBeGreaterThan(60);
    expect(longer?.retryAfter).toBeLessThanOrEqual(15 * 60);
  });

  it("a successful sign-in forgets the account's failures, and only itself at the client address", async () => {
    const p = platform();
    await fail(p, 4, 'ok@example.com');
    await forgetFailedLogins(p, 'ok@example.com', '192.0.2.1');
    await fail(p, 5, 'ok@example.com', (i) => `203.0.113.${i + 1}`);
    expect(await refusalOf(p, 'ok@example.com', '203.0.113.99')).toBeDefined();

    // 30 people behind one address sign in, then 30 failures there are still admitted, not 31.
    const q = platform();
    const perAddress = ADDRESS_TIERS[0]!.attempts;
    for (let i = 0; i < perAddress; i++) {
      expect(await refusalOf(q, `colleague${i}@example.com`, '192.0.2.7')).toBeUndefined();
      await forgetFailedLogins(q, `colleague${i}@example.com`, '192.0.2.7');
    }
    for (let i = 0; i < perAddress; i++) expect(await refusalOf(q, `user${i}@example.com`, '192.0.2.7'), `failure ${i + 1}`).toBeUndefined();
    await forgetFailedLogins(q, 'user0@example.com', '192.0.2.7'); // a success gives back itself only
    expect(await refusalOf(q, 'someone-else@example.com', '192.0.2.7')).toBeUndefined();
    expect(await refusalOf(q, 'someone-else@example.com', '192.0.2.7')).toBeDefined();
  });

  it(`one client address gets ${ADDRESS_TIERS[0]!.attempts} failed sign-ins a minute whatever the accounts`, async () => {
    const p = platform();
    const n = ADDRESS_TIERS[0]!.attempts;
    for (let i = 0; i < n; i++) expect(await refusalOf(p, `user${i}@example.com`, '192.0.2.50')).toBeUndefined();
    expect(await refusalOf(p, 'fresh@example.com', '192.0.2.50')).toBeDefined();
    expect(await refusalOf(p, 'fresh@example.com', '192.0.2.51')).toBeUndefined();
  });

  it('counts IPv4 as is (also IPv4-mapped) and IPv6 by its /64', () => {
    expect(clientNetwork('192.0.2.1')).toBe('192.0.2.1');
    expect(clientNetwork('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(clientNetwork('2001:db8:0:1:aaaa::1')).toBe('2001:db8:0:1::/64');
    expect(clientNetwork('2001:0db8:0000:0001:bbbb:cccc:dddd:eeee')).toBe('2001:db8:0:1::/64');
    expect(clientNetwork('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(clientNetwork('::1')).toBe('0:0:0:0::/64');
  });
});
