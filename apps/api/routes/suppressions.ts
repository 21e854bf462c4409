import { z } from 'zod';
import { emailSchema } from '../../../domain/contacts/schema.ts';
import { LIMITS } from '../../../domain/limits.ts';
import { getSuppression, listSuppressions, suppress, unsuppress } from '../../../domain/suppressions/service.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { reply, route, type RouteSpec } from '../http/route.ts';
import { cursorParam, limitParam } from './common.ts';

const suppression = z.object({
  email: z.string(),
  reason: z.enum(['hard_bounce', 'soft_bounces', 'complaint', 'manual']),
  detail: z.string().nullable().describe('The bounce status and diagnostic, the complaint, or the note given by hand'),
  emailId: z.string().nullable().describe('The email whose bounce or complaint suppressed the address'),
  createdAt: z.string(),
});
const emailParams = z.object({ email: emailSchema });

export function suppressionRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/suppressions', tag: 'Suppressions', auth: 'secret',
      summary: 'The addresses no email of any type reaches, newest first (generic list envelope, cursor paging)',
      query: z.object({ limit: limitParam(), cursor: cursorParam().optional() }),
      response: z.object({ items: z.array(suppression), nextCursor: z.string().nullable(), hasMore: z.boolean(), total: z.number().int() }),
      handle: ({ auth, query }) => listSuppressions(p, auth.projectId, query),
    }),
    route({
      method: 'get', path: '/suppressions/:email', tag: 'Suppressions', auth: 'secret', errors: [404],
      summary: 'Whether an address is suppressed, and why (404 when it is not)',
      params: emailParams,
      response: suppression,
      handle: ({ auth, params }) => getSuppression(p, auth.projectId, params.email),
    }),
    route({
      method: 'post', path: '/suppressions', tag: 'Suppressions', auth: 'secret', status: 201, alsoStatus: [200],
      summary: 'Suppress an address by hand (201; 200 with the existing entry when it is suppressed already)',
      body: z.strictObject({ email: emailSchema, reason: z.string().trim().min(1).max(LIMITS.description).optional().describe('A note kept as the entry\'s detail') }),
      response: suppression,
      handle: async ({ auth, body }) => {
        const { suppression: entry, created } = await suppress(p, auth.projectId, body.email, { reason: 'manual', detail: body.reason ?? null });
        return reply(entry, { status: created ? 201 : 200 });
      },
    }),
    route({
      method: 'delete', path: '/suppressions/:email', tag: 'Suppressions', auth: 'secret', status: 204, errors: [404],
      summary: 'Remove an address from the list: email of every type may reach it again (a contact it unsubscribed stays unsubscribed)',
      params: emailParams,
      handle: ({ auth, params }) => unsuppress(p, auth.projectId, params.email),
    }),
  ];
}
