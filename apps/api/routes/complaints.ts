import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import { recordComplaint } from '../../../domain/mail/complaints.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { route, type RouteSpec } from '../http/route.ts';

export function complaintRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'post', path: '/v1/complaints', tag: 'Public API', auth: 'secret', status: 202, errors: [404],
      summary: 'Report a spam complaint (a feedback report, or the email id): records email.complaint and unsubscribes the contact',
      body: z
        .strictObject({
          emailId: z.string().min(1).max(100).optional().describe('The id POST /v1/send returned'),
          report: z.string().min(1).max(LIMITS.complaintReportBytes).optional().describe('A feedback report (ARF) or the complained-about message, as text'),
        })
        .refine((b) => b.emailId !== undefined || b.report !== undefined, { message: 'Give emailId or report', path: ['emailId'] }),
      response: z.object({ emailId: z.string(), contactId: z.string() }),
      handle: ({ auth, body }) => recordComplaint(p, auth.projectId, body),
    }),
  ];
}
