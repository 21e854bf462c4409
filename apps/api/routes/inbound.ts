import { z } from 'zod';
import { rawMessageOf } from '../../../domain/inbound/raw.ts';
import { AppError } from '../../../domain/errors.ts';
import { LIMITS } from '../../../domain/limits.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { route, type RouteSpec } from '../http/route.ts';

export function inboundRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/inbound/:eventId/raw', tag: 'Events', auth: 'secret', errors: [404],
      summary: 'The raw message (RFC 5322, as received) an email.received event was recorded from',
      description:
        'The bytes the inbound listener took, unchanged, for INBOUND_RAW_RETENTION_DAYS (default 30) after they came; ' +
        'then, or when the event is unknown or not an email.received of this project, or INBOUND_RAW_RETENTION_DAYS is 0, 404 NOT_FOUND.',
      params: z.object({ eventId: z.string().min(1).max(LIMITS.id) }),
      rawResponse: { contentType: 'message/rfc822', description: 'The message as received' },
      handle: async ({ auth, params }) => {
        const raw = await rawMessageOf(p, auth.projectId, params.eventId);
        if (!raw) throw new AppError('NOT_FOUND', 'No raw message is kept for this event');
        return raw;
      },
    }),
  ];
}
