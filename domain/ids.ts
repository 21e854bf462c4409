import { createHash, randomBytes, randomUUID } from 'node:crypto';

let lastMs = -1;
let sequence = 0;

/**
 * Time-ordered ids (UUIDv7, RFC 9562): sorting by `_id` is sorting by creation, which cursors rely
 * on. The 48-bit millisecond time, then a 12-bit sequence (method 1 of the RFC: ids made in one
 * millisecond stay in order; the 4,097th borrows the next millisecond, and a clock that steps back
 * keeps the last one), then random bits from `randomUUID`, which Node draws from a pool. Ours, not
 * the `uuid` package's v7: that asks the OS for 16 fresh bytes per id, which was 5% of the CPU of
 * a tracked event (bench:track profile).
 */
export function newId(): string {
  const random = randomUUID();
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    sequence = 0;
  } else if (++sequence > 0xfff) {
    lastMs++;
    sequence = 0;
  }
  const time = lastMs.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${sequence.toString(16).padStart(3, '0')}${random.slice(18)}`;
}

/** An unguessable token with a readable prefix, e.g. `sk_…`. */
export const newToken = (prefix: string): string => `${prefix}${randomBytes(24).toString('base64url')}`;

/** Keys and session tokens are high-entropy, so a fast hash is enough to keep them unreadable at rest. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * A UUID-shaped id (version 8) that is a function of `parts`: the same parts always give the same
 * id, so a write repeated after a crash finds what the first one wrote. (Not time-ordered.)
 */
export function derivedId(...parts: string[]): string {
  const h = hashOf(parts);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}${derivedTail(h)}`;
}

/**
 * `derivedId(...parts)` in the order of `order`, a time-ordered id (newId): the first 64 bits are
 * `order`'s time and sequence, the other 62 the hash of `parts`. Records written in the order of
 * their `order` land next to each other in every index that ends with `_id`, where derived ids
 * landed on a random page of each: a campaign's commits (its emails ordered by contact) took a third
 * less time (bench/results/campaign-profile.md, session 15). An `order` that is not UUID-shaped
 * gives `derivedId(...parts)`.
 */
export function orderedDerivedId(order: string, ...parts: string[]): string {
  const prefix = ORDER_PREFIX.exec(order);
  if (!prefix) return derivedId(...parts);
  return `${prefix[1]}-${prefix[2]}-8${prefix[3]}${derivedTail(hashOf(parts))}`;
}

const ORDER_PREFIX = /^([0-9a-f]{8})-([0-9a-f]{4})-[0-9a-f]([0-9a-f]{3})-[0-9a-f]{4}-[0-9a-f]{12}$/;

const hashOf = (parts: string[]): string => createHash('sha256').update(parts.join('\u0000')).digest('hex');

/** The variant and the last 62 bits of a derived id, from its hash. */
const derivedTail = (h: string): string => `-${((parseInt(h[16], 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;

/** The current time's ISO text, made once per millisecond: an email asks for it some five times. */
let isoMs = NaN;
let iso = '';
export function nowIso(now?: Date): string {
  if (now) return now.toISOString();
  const ms = Date.now();
  if (ms !== isoMs) [isoMs, iso] = [ms, new Date(ms).toISOString()];
  return iso;
}
