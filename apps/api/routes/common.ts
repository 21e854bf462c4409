import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';

export const idParams = z.object({ id: z.string().min(1).max(LIMITS.id) });

/**
 * `cursor` of the lists that page by an opaque cursor (events, suppressions, webhooks). Ours are
 * under 500 characters; 1,000 of any script, percent-encoded (12 bytes each at most), keep the
 * request line under Node's 16 KB header limit, so a longer one is our 422, never its 431.
 */
export const cursorParam = () => z.string().min(1).max(1000);

/** `limit` for cursor and "recent" listings: default 20, 1-100. */
export const limitParam = (fallback = 20) => z.coerce.number().int().min(1).max(LIMITS.pageSize).default(fallback);

export const isoDate = z.iso.datetime({ offset: true, message: 'Expected an ISO 8601 timestamp' });
