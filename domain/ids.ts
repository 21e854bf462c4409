import { createHash, randomBytes } from 'node:crypto';
import { v7 } from 'uuid';

/** Time-ordered ids (UUIDv7): sorting by `_id` is sorting by creation, which cursors rely on. */
export const newId = (): string => v7();

/** An unguessable token with a readable prefix, e.g. `sk_…`. */
export const newToken = (prefix: string): string => `${prefix}${randomBytes(24).toString('base64url')}`;

/** Keys and session tokens are high-entropy, so a fast hash is enough to keep them unreadable at rest. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * A UUID-shaped id that is a function of `parts`: the same parts always give the same id, so a
 * write repeated after a crash finds what the first one wrote. (Not time-ordered.)
 */
export function derivedId(...parts: string[]): string {
  const h = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${((parseInt(h[16], 16) & 0x3) | 0x8).toString(16)}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export const nowIso = (now: Date = new Date()): string => now.toISOString();
