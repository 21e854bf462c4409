import { z } from 'zod';
import { contactEvents, deleteEventName, eventNames, eventStats, listEvents } from '../../../domain/events/service.ts';
import { STATS_INTERVALS } from '../../../domain/events/buckets.ts';
import { LIMITS } from '../../../domain/limits.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { reply, route, type RouteSpec } from '../http/route.ts';
import { cursorParam, isoDate, limitParam } from './common.ts';
import { eventNameSchema } from './track.ts';

/** `cursor`: the `nextCursor` of the previous page, unchanged (opaque; a made-up one is a 422). */
const page = { limit: limitParam(50), cursor: cursorParam().optional() };

/** The array stays `data` (what clients read); where the next page starts goes beside it. */
const pageReply = ({ events, ...page }: { events: unknown[]; nextCursor: string | null; hasMore: boolean }) => reply(events, { page });

export const event = z.object({
  id: z.string(),
  name: z.string(),
  contactId: z.string(),
  data: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  system: z.boolean(),
  createdAt: z.string(),
});

const counts = {
  total: z.number().int(),
  events: z.array(z.object({ name: z.string(), count: z.number().int() })),
};

export function eventRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/events', tag: 'Events', auth: 'secret',
      summary: 'Events newest first (time, then id), a page of `limit` at a time: `nextCursor` and `hasMore` are beside `data`; `name` filters by exact name',
      query: z.object({ name: eventNameSchema.optional(), ...page }),
      response: z.array(event),
      cursorPage: true,
      handle: async ({ auth, query }) => pageReply(await listEvents(p, auth.projectId, query)),
    }),
    route({
      method: 'get', path: '/events/names', tag: 'Events', auth: 'secret',
      summary: 'Distinct event names, most frequent first',
      response: z.array(z.string()),
      handle: ({ auth }) => eventNames(p, auth.projectId),
    }),
    route({
      method: 'get', path: '/events/stats', tag: 'Events', auth: 'secret',
      summary:
        'Event counts by name between optional `start` and `end` (inclusive). With `interval` (`hour`, `day` or `week`; needs `start` and `end`), ' +
        `also \`buckets\`: the same counts per period, counted from \`start\` (pass your local midnight for your own days), the last cut at \`end\`, at most ${LIMITS.statsBuckets} a call`,
      query: z.object({ start: isoDate.optional(), end: isoDate.optional(), interval: z.enum(STATS_INTERVALS).optional() }),
      response: z.object({
        start: z.string().nullable(),
        end: z.string().nullable(),
        ...counts,
        buckets: z.array(z.object({ start: z.string(), end: z.string(), ...counts })).optional(),
      }),
      handle: ({ auth, query }) =>
        eventStats(p, auth.projectId, {
          start: query.start && new Date(query.start).toISOString(),
          end: query.end && new Date(query.end).toISOString(),
          interval: query.interval,
        }),
    }),
    route({
      method: 'get', path: '/events/contact/:contactId', tag: 'Events', auth: 'secret', errors: [404],
      summary: 'Events of one contact newest first, paged like GET /events; `name` filters by exact name',
      params: z.object({ contactId: z.string().min(1).max(200) }),
      query: z.object({ name: eventNameSchema.optional(), ...page }),
      response: z.array(event),
      cursorPage: true,
      handle: async ({ auth, params, query }) => pageReply(await contactEvents(p, auth.projectId, params.contactId, query)),
    }),
    route({
      method: 'delete', path: '/events/:eventName', tag: 'Events', auth: 'secret', errors: [404, 409],
      summary: 'Delete every record of a custom event no segment or workflow uses',
      params: z.object({ eventName: eventNameSchema }),
      response: z.object({ name: z.string(), deleted: z.number().int() }),
      handle: ({ auth, params }) => deleteEventName(p, auth.projectId, params.eventName),
    }),
  ];
}
