import { z } from 'zod';
import { callDataSchema, emailSchema } from '../../../domain/contacts/schema.ts';
import { track } from '../../../domain/events/service.ts';
import { LIMITS } from '../../../domain/limits.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { withIdempotencyKey } from '../http/idempotency.ts';
import { route, type RouteSpec } from '../http/route.ts';

export const eventNameSchema = z.string().trim().min(1).max(LIMITS.eventName);

export function trackRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'post', path: '/v1/track', tag: 'Public API', auth: 'key', errors: [409],
      summary: 'Record an event for a contact (created when unknown); starts matching workflows',
      body: z.strictObject({
        email: emailSchema,
        event: eventNameSchema,
        subscribed: z.boolean().optional(),
        data: callDataSchema.optional(),
      }),
      response: z.object({ contact: z.string(), event: z.string(), timestamp: z.string() }),
      handle: (input) => withIdempotencyKey(p, input, 'track', (attempt) => track(p, input.auth.projectId, input.body, attempt)),
    }),
  ];
}
