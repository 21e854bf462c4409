import { createHash, randomBytes } from 'node:crypto';
import { v7 } from 'uuid';

/** Time-ordered ids (UUIDv7): sorting by `_id` is sorting by creation, which cursors rely on. */
export const newId = (): string => v7();

/** An unguessable token with a readable prefix, e.g. `sk_…`. */
export const newToken = (prefix: string): string => `${prefix}${randomBytes(24).toString('base64url')}`;

/** Keys and session tokens are high-entropy, so a fast hash is enough to keep them unreadable at rest. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex');

export const nowIso = (now: Date = new Date()): string => now.toISOString();
