// Cursors of lists newest first by (createdAt, id): events, suppressions.
import type { Filter } from '../ports/store.ts';
import { invalid } from './errors.ts';
import { LIMITS } from './limits.ts';

/** Where a page newest first ended: the last item's time and id (ties of time are common). */
export interface TimePosition {
  createdAt: string;
  id: string;
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$/;

/** Opaque to clients: base64url of `[createdAt, id]`, so the format can change without a new parameter. */
export function encodeTimeCursor(position: TimePosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.id])).toString('base64url');
}

/** A cursor this API made, or a 422 on `cursor`: a tampered or foreign value never reaches the store. */
export function decodeTimeCursor(cursor: string): TimePosition {
  let value: unknown;
  try {
    value = /^[A-Za-z0-9_-]+$/.test(cursor) ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) : undefined;
  } catch {
    value = undefined;
  }
  if (
    Array.isArray(value) &&
    value.length === 2 &&
    typeof value[0] === 'string' &&
    ISO_INSTANT.test(value[0]) &&
    typeof value[1] === 'string' &&
    value[1].length > 0 &&
    value[1].length <= LIMITS.id + 1 + LIMITS.email // an id, or `projectId/email`
  ) {
    return { createdAt: value[0], id: value[1] };
  }
  throw invalid('cursor', 'Invalid cursor: pass the nextCursor of the previous page unchanged', 'invalid_cursor');
}

/**
 * The items after `position` in the order newest first (createdAt desc, _id desc). The range on
 * `createdAt` is what the indexes ending with it serve (after the equalities); the `$or` only drops
 * the items of that very instant at or before the last one listed.
 */
export function olderThan(position: TimePosition): Filter {
  return {
    createdAt: { $lte: position.createdAt },
    $or: [{ createdAt: { $lt: position.createdAt } }, { _id: { $lt: position.id } }],
  };
}
