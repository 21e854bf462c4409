import { isIPv6 } from 'node:net';
import type { Platform } from '../../runtime/platform.ts';
import { AppError } from '../errors.ts';
import { hashToken } from '../ids.ts';

/**
 * Backoff on sign-in attempts, per account (the email asked for, whether or not it has an
 * account, so the throttle itself tells nothing) and per client address. Each tier allows
 * `attempts` failed sign-ins in a fixed window that starts at the first; the longer windows
 * make the wait grow with the failures. Budgets live behind the RateLimiter port, so every
 * replica counts the same failures.
 */
export interface LoginTier {
  attempts: number;
  windowMs: number;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/** 5 a minute, 10 a quarter, 20 an hour, 50 a day: at most 50 guesses a day at one account. */
export const ACCOUNT_TIERS: readonly LoginTier[] = [
  { attempts: 5, windowMs: MINUTE },
  { attempts: 10, windowMs: 15 * MINUTE },
  { attempts: 20, windowMs: HOUR },
  { attempts: 50, windowMs: 24 * HOUR },
];

/** Wider: an office or a carrier's NAT puts many people behind one address. */
export const ADDRESS_TIERS: readonly LoginTier[] = [
  { attempts: 30, windowMs: MINUTE },
  { attempts: 100, windowMs: HOUR },
  { attempts: 300, windowMs: 24 * HOUR },
];

interface Budget {
  key: string;
  limit: number;
  windowMs: number;
}

const budgets = (scope: string, tiers: readonly LoginTier[]): Budget[] =>
  tiers.map((t) => ({ key: `login:${scope}`, limit: t.attempts, windowMs: t.windowMs }));

// Hashed: the limiter's store (Redis) is not a place for the addresses people sign in with.
const accountBudgets = (email: string) => budgets(`account:${hashToken(email)}`, ACCOUNT_TIERS);
const addressBudgets = (ip: string) => budgets(`address:${clientNetwork(ip)}`, ADDRESS_TIERS);

/**
 * The address a client is counted under: IPv4 as is (also when IPv4-mapped), IPv6 by its /64,
 * the block one subscriber gets, so a client cannot step past its budget by changing address.
 */
export function clientNetwork(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  const [head = '', tail] = ip.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

const refusal = (retryAfterMs: number) =>
  new AppError('RATE_LIMIT_EXCEEDED', 'Too many failed sign-in attempts; try again later', {
    retryAfter: Math.max(1, Math.ceil(retryAfterMs / 1000)),
    suggestion: 'Wait the Retry-After seconds before signing in again; sessions already open keep working.',
  });

/**
 * Admits one sign-in attempt or throws 429 with the longest wait among the spent tiers. A
 * refused attempt costs nothing (it checks no password), so retrying during a wait does not
 * lengthen it; an admitted one is counted before the password is checked, so parallel guesses
 * cannot slip past the budget; `forgetFailedLogins` undoes the count of a successful one.
 */
export async function admitLoginAttempt(p: Platform, email: string, ip: string): Promise<void> {
  const all = [...addressBudgets(ip), ...accountBudgets(email)];
  const peeked = await Promise.all(all.map((b) => p.limiter.peek(b.key, b.limit, b.windowMs)));
  const spent = peeked.filter((d) => !d.allowed);
  if (spent.length > 0) throw refusal(Math.max(...spent.map((d) => d.retryAfterMs)));
  const taken = await Promise.all(all.map((b) => p.limiter.consume(b.key, b.limit, b.windowMs)));
  const raced = taken.filter((d) => !d.allowed);
  if (raced.length > 0) throw refusal(Math.max(...raced.map((d) => d.retryAfterMs)));
}

/**
 * A successful sign-in: the account's failures are forgotten, and the client address gets this
 * attempt back (it keeps its failures), so an office signing in at nine is not throttled.
 */
export async function forgetFailedLogins(p: Platform, email: string, ip: string): Promise<void> {
  await Promise.all([
    ...accountBudgets(email).map((b) => p.limiter.reset(b.key, b.limit, b.windowMs)),
    ...addressBudgets(ip).map((b) => p.limiter.giveBack(b.key, b.limit, b.windowMs)),
  ]);
}
