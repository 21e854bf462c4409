import { z } from 'zod';
import {
  conditionCountSchema,
  countConditionSchema,
  createSegmentSchema,
  membersSchema,
  patchSegmentSchema,
  segmentContactsQuery,
  segmentContactsSchema,
  segmentListItemSchema,
  segmentSchema,
} from '../../../domain/segments/schema.ts';
import {
  addSegmentMembers,
  countCondition,
  createSegment,
  deleteSegment,
  getSegment,
  listSegmentContacts,
  listSegments,
  patchSegment,
  removeSegmentMembers,
} from '../../../domain/segments/service.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { LIMITS } from '../../../domain/limits.ts';
import { reply, route, type RouteSpec } from '../http/route.ts';
import { cursorParam, idParams } from './common.ts';

export function segmentRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/segments', tag: 'Segments', auth: 'secret',
      summary:
        'List segments, newest first, each with its current member count: every segment, or with `limit` (or `cursor`) a page of them, ' +
        '`nextCursor` and `hasMore` beside `data`',
      query: z.object({ limit: z.coerce.number().int().min(1).max(LIMITS.pageSize).optional(), cursor: cursorParam().optional() }),
      response: z.array(segmentListItemSchema),
      cursorPage: true,
      handle: async ({ auth, query }) => {
        // A cursor alone goes on with pages of the usual size.
        const limit = query.limit ?? (query.cursor === undefined ? undefined : 20);
        const { segments, ...page } = await listSegments(p, auth.projectId, { limit, cursor: query.cursor });
        return reply(segments, { page });
      },
    }),
    route({
      method: 'post', path: '/segments', tag: 'Segments', auth: 'secret', status: 201, errors: [409],
      summary: 'Create a DYNAMIC segment (with a condition) or a STATIC one (with members); the slug must be new in the project',
      body: createSegmentSchema,
      response: segmentSchema,
      handle: ({ auth, body }) => createSegment(p, auth.projectId, body),
    }),
    route({
      method: 'post', path: '/segments/count', tag: 'Segments', auth: 'secret',
      summary: 'Count the contacts a condition selects now, without saving a segment (checked as on create: 422 names each bad filter)',
      body: countConditionSchema,
      response: conditionCountSchema,
      handle: ({ auth, body }) => countCondition(p, auth.projectId, body.condition),
    }),
    route({
      method: 'get', path: '/segments/:id', tag: 'Segments', auth: 'secret', errors: [404],
      summary: 'One segment with its current member count',
      params: idParams,
      response: segmentSchema,
      handle: ({ auth, params }) => getSegment(p, auth.projectId, params.id),
    }),
    route({
      method: 'patch', path: '/segments/:id', tag: 'Segments', auth: 'secret', errors: [404, 409],
      summary: 'Change name, description, condition (DYNAMIC only) or trackMembership',
      params: idParams,
      body: patchSegmentSchema,
      response: segmentSchema,
      handle: ({ auth, params, body }) => patchSegment(p, auth.projectId, params.id, body),
    }),
    route({
      method: 'delete', path: '/segments/:id', tag: 'Segments', auth: 'secret', status: 204, errors: [404],
      summary: 'Delete a segment; campaigns and workflows that name it stop finding it',
      params: idParams,
      handle: ({ auth, params }) => deleteSegment(p, auth.projectId, params.id),
    }),
    route({
      method: 'get', path: '/segments/:id/contacts', tag: 'Segments', auth: 'secret', errors: [404],
      summary: 'The contacts currently in the segment, newest first, page-numbered',
      params: idParams,
      query: segmentContactsQuery,
      response: segmentContactsSchema,
      handle: ({ auth, params, query }) => listSegmentContacts(p, auth.projectId, params.id, query),
    }),
    route({
      method: 'post', path: '/segments/:id/members', tag: 'Segments', auth: 'secret', errors: [404, 409],
      summary: 'Add contacts to a STATIC segment by email (at most 1,000); unknown emails become contacts',
      params: idParams,
      body: membersSchema,
      response: z.object({ added: z.number().int(), created: z.number().int(), alreadyMembers: z.number().int() }),
      handle: ({ auth, params, body }) => addSegmentMembers(p, auth.projectId, params.id, body.emails),
    }),
    route({
      method: 'delete', path: '/segments/:id/members', tag: 'Segments', auth: 'secret', errors: [404, 409],
      summary: 'Remove contacts from a STATIC segment by email (at most 1,000)',
      params: idParams,
      body: membersSchema,
      response: z.object({ removed: z.number().int(), notMembers: z.number().int() }),
      handle: ({ auth, params, body }) => removeSegmentMembers(p, auth.projectId, params.id, body.emails),
    }),
  ];
}
