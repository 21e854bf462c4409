import { z } from 'zod';
import { getEmail } from '../../../domain/mail/lookup.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { route, type RouteSpec } from '../http/route.ts';
import { idParams } from './common.ts';
import { event } from './events.ts';

const email = z.object({
  id: z.string(),
  to: z.string().nullable().describe('null once the contact was deleted (the email stays as anonymous history)'),
  from: z.string(),
  subject: z.string().nullable().describe("With the recipient's variables rendered; null once the contact was deleted"),
  type: z.enum(['transactional', 'marketing']),
  status: z
    .enum(['QUEUED', 'SENDING', 'DELIVERED', 'BOUNCED', 'FAILED', 'SKIPPED', 'SUPPRESSED'])
    .describe('QUEUED until an attempt ends (distributed: SENDING while a mailer has it in hand); SENDING while 4xx answers or an outage are retried; then final'),
  createdAt: z.string(),
  events: z.array(event).describe('The events about this email (data.emailId), oldest first, at most 100'),
  response: z.string().optional().describe("The relay's last answer: its 250 line, a 4xx being retried (status SENDING), or the 5xx"),
  bounce: z
    .object({ type: z.enum(['hard', 'soft']), status: z.string().nullable().describe('Enhanced status code, e.g. 5.1.1'), diagnostic: z.string().nullable() })
    .optional()
    .describe('Hard: a 5xx about the address, or a permanent bounce report about it; soft: 4xx answers until SOFT_BOUNCE_RETRY_HOURS ran out, or a bounce report that refuses the message rather than the address (5.3.x, 5.6.x, 5.7.x)'),
  deferred: z
    .object({ firstAt: z.string(), count: z.number().int(), nextTryAt: z.string().nullable() })
    .optional()
    .describe('While 4xx answers are retried (status SENDING): the first one, how many so far, and the next try; the soft bounce comes SOFT_BOUNCE_RETRY_HOURS after firstAt'),
  complaint: z.object({ at: z.string(), detail: z.string().nullable() }).optional().describe('A feedback report or POST /v1/complaints about this email'),
  reason: z.string().optional().describe('Why it was not sent (SKIPPED, SUPPRESSED, FAILED: e.g. the relay refused the message or its sender)'),
});

export function emailRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/emails/:id', tag: 'Emails', auth: 'secret', errors: [404],
      summary: 'One email by the id /v1/send returns: status, the relay\'s answer, bounce or complaint, and its events',
      params: idParams,
      response: email,
      handle: ({ auth, params }) => getEmail(p, auth.projectId, params.id),
    }),
  ];
}
