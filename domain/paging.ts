import type { Filter } from '../ports/store.ts';
import { invalid } from './errors.ts';

/**
 * Lists newest first by time-ordered id (contacts, segments): the next page is the ids below the
 * cursor, the last id of the page before. Anything not shaped like an id is a 422 on `cursor`.
 */
export function belowIdCursor(cursor: string | undefined): Filter {
  if (cursor === undefined) return {};
  if (!/^[0-9a-f-]{36}$/.test(cursor)) throw invalid('cursor', 'Invalid cursor');
  return { _id: { $lt: cursor } };
}

/** The page fields of a paged listing (`page` 1-based). */
export const pageOf = (query: { page: number; pageSize: number }, total: number) => ({
  page: query.page,
  pageSize: query.pageSize,
  total,
  totalPages: Math.ceil(total / query.pageSize),
});
