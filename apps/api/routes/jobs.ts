import { z } from 'zod';
import { AppError } from '../../../domain/errors.ts';
import { getJob, queueBulk, queueImport, type BULK_TYPES } from '../../../domain/jobs/service.ts';
import { LIMITS } from '../../../domain/limits.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { reply, route, type RouteSpec } from '../http/route.ts';


const job = z.object({
  id: z.string(),
  type: z.enum(['IMPORT', 'BULK_SUBSCRIBE', 'BULK_UNSUBSCRIBE', 'BULK_DELETE']),
  status: z.enum(['QUEUED', 'RUNNING', 'COMPLETED', 'FAILED']),
  total: z.number().int(),
  processed: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
  failed: z.number().int(),
  errors: z.array(z.object({ row: z.number().int().optional(), contactId: z.string().optional(), message: z.string() })),
  createdAt: z.string(),
  finishedAt: z.string().nullable(),
});
const accepted = job.extend({ jobId: z.string() });
const jobParams = z.object({ jobId: z.string().min(1).max(100) });
const contactIds = z.strictObject({
  contactIds: z.array(z.string().min(1).max(LIMITS.id)).min(1).max(LIMITS.bulkIds, `At most ${LIMITS.bulkIds} contact ids per request`),
});

const bulkRoute = (p: Platform, action: keyof typeof BULK_TYPES, summary: string) =>
  route({
    method: 'post', path: `/contacts/bulk-${action}`, tag: 'Contacts', auth: 'secret', status: 202,
    summary, body: contactIds, response: accepted,
    handle: async ({ auth, body }) => {
      const queued = await queueBulk(p, auth.projectId, action, body.contactIds);
      return reply({ jobId: queued.id, ...queued }, { message: `Bulk ${action} queued` });
    },
  });

export function jobRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'post', path: '/contacts/import', tag: 'Contacts', auth: 'secret', status: 202, errors: [413],
      summary: `Import contacts from a CSV file (multipart field \`file\`, 5 MB, at most ${LIMITS.csvRows} rows, \`email\` column required); runs in the background`,
      description:
        'The request checks the header (422 at once: empty file, no `email` column, a column that cannot be a data key, no rows after the header, ' +
        'a header not ending within the first 64 KiB) and answers 202 with the job, `total` 0. The job then reads the rows: `total` becomes the number ' +
        `of rows, and a row that cannot be imported is counted in \`failed\` with \`{row, message}\`. A file that is not valid CSV further on, or has more than ${LIMITS.csvRows} rows, ` +
        'makes the job `FAILED` with the reason as its error, and imports nothing.',
      upload: { field: 'file', maxBytes: LIMITS.body.csvBytes },
      response: accepted,
      handle: async ({ auth, req }) => {
        if (!req.file) {
          throw new AppError('VALIDATION_ERROR', 'A CSV file is required', {
            fieldErrors: [{ field: 'file', message: 'Send multipart/form-data with the CSV in field "file"', code: 'required' }],
          });
        }
        const queued = await queueImport(p, auth.projectId, req.file.buffer);
        return reply({ jobId: queued.id, ...queued }, { message: 'Import queued' });
      },
    }),
    route({
      method: 'get', path: '/contacts/import/:jobId', tag: 'Contacts', auth: 'secret', errors: [404],
      summary: 'Status of an import job', params: jobParams, response: job,
      handle: ({ auth, params }) => getJob(p, auth.projectId, params.jobId, 'import'),
    }),
    bulkRoute(p, 'subscribe', 'Subscribe up to 1,000 contacts in the background'),
    bulkRoute(p, 'unsubscribe', 'Unsubscribe up to 1,000 contacts in the background'),
    bulkRoute(p, 'delete', 'Delete up to 1,000 contacts with their events and memberships, in the background'),
    route({
      method: 'get', path: '/contacts/bulk/:jobId', tag: 'Contacts', auth: 'secret', errors: [404],
      summary: 'Status of a bulk subscribe, unsubscribe or delete job', params: jobParams, response: job,
      handle: ({ auth, params }) => getJob(p, auth.projectId, params.jobId, 'bulk'),
    }),
  ];
}
