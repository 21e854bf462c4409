import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';

export const idParams = z.object({ id: z.string().min(1).max(LIMITS.id) });

/** `limit` for cursor and "recent" listings: default 20, 1-100. */
export const limitParam = (fallback = 20) => z.coerce.number().int().min(1).max(LIMITS.pageSize).default(fallback);

export const isoDate = z.iso.datetime({ offset: true, message: 'Expected an ISO 8601 timestamp' });
