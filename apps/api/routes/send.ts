import { LIMITS } from '../../../domain/limits.ts';
import { sendResponseSchema, sendSchema } from '../../../domain/send/schema.ts';
import { send } from '../../../domain/send/service.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { withIdempotencyKey } from '../http/idempotency.ts';
import { route, type RouteSpec } from '../http/route.ts';

export function sendRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'post', path: '/v1/send', tag: 'Public API', auth: 'secret', errors: [403, 409],
      summary: 'Send an email to one or more recipients (each gets their own), from a verified domain',
      bodyLimit: LIMITS.body.sendBytes,
      body: sendSchema,
      response: sendResponseSchema,
      handle: (input) => withIdempotencyKey(p, input, 'send', (attempt) => send(p, input.auth.projectId, input.body, attempt)),
    }),
  ];
}
