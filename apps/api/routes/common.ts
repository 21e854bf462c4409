import { z } from 'zod';

export const idParams = z.object({ id: z.string().min(1).max(200) });

/** `limit` for cursor and "recent" listings: default 20, 1-100. */
export const limitParam = (fallback = 20) => z.coerce.number().int().min(1).max(100).default(fallback);

export const isoDate = z.iso.datetime({ offset: true, message: 'Expected an ISO 8601 timestamp' });
