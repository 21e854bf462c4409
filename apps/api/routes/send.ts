import { idempotent } from '../../../domain/idempotency.ts';
import { sendResponseSchema, sendSchema } from '../../../domain/send/schema.ts';
import { send } from '../../../domain/send/service.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { route, type RouteSpec } from '../http/route.ts';

export function sendRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'post', path: '/v1/send', tag: 'Public API', auth: 'secret', errors: [403, 409],
      summary: 'Send an email to one or more recipients (each gets their own), from a verified domain',
      // Ten attachments of up to 10 MB together, base64-encoded, plus the rest of the request.
      bodyLimit: '15mb',
      body: sendSchema,
      response: sendResponseSchema,
      handle: async ({ auth, body, req, res }) => {
        const key = req.get('idempotency-key');
        const { response, replayed } = await idempotent(p, { projectId: auth.projectId, endpoint: 'send', key }, body, () =>
          send(p, auth.projectId, body),
        );
        if (replayed) res.setHeader('Idempotent-Replayed', 'true');
        return response;
      },
    }),
  ];
}
