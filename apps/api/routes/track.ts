import { z } from 'zod';
import { callDataSchema, emailSchema } from '../../../domain/contacts/schema.ts';
import { track } from '../../../domain/events/service.ts';
import { idempotent } from '../../../domain/idempotency.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { route, type RouteSpec } from '../http/route.ts';

export const eventNameSchema = z.string().trim().min(1).max(200);

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
      handle: async ({ auth, body, req, res }) => {
        const key = req.get('idempotency-key');
        const { response, replayed } = await idempotent(p, { projectId: auth.projectId, endpoint: 'track', key }, body, () =>
          track(p, auth.projectId, body),
        );
        if (replayed) res.setHeader('Idempotent-Replayed', 'true');
        return response;
      },
    }),
  ];
}
