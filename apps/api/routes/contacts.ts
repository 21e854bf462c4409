import { z } from 'zod';
import { contactPatchSchema, contactSchema, newContactSchema } from '../../../domain/contacts/schema.ts';
import { deleteContact, getContact, listContacts, patchContact, upsertContact } from '../../../domain/contacts/service.ts';
import { LIMITS } from '../../../domain/limits.ts';
import { segmentsOfContact } from '../../../domain/segments/of-contact.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { reply, route, type RouteSpec } from '../http/route.ts';
import { idParams, limitParam } from './common.ts';

/** `subscribed=true|false` keeps only (un)subscribed contacts; `total` counts the filtered list. */
const subscribedParam = z
  .enum(['true', 'false'], { message: 'subscribed is true or false' })
  .transform((v) => v === 'true')
  .describe('Only subscribed (true) or unsubscribed (false) contacts');

const contactWithMeta = contactSchema.extend({ _meta: z.object({ isNew: z.boolean(), isUpdate: z.boolean() }) });

export function contactRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/contacts', tag: 'Contacts', auth: 'secret',
      summary: 'List contacts, newest first, with cursor paging, partial-match email search and a subscribed filter',
      query: z.object({
        limit: limitParam(),
        cursor: z.string().max(100).optional(),
        search: z.string().max(LIMITS.search).optional(),
        subscribed: subscribedParam.optional(),
      }),
      response: z.object({
        contacts: z.array(contactSchema),
        cursor: z.string().nullable(),
        hasMore: z.boolean(),
        total: z.number().int().optional().describe('Only when no cursor was given'),
      }),
      handle: ({ auth, query }) => listContacts(p, auth.projectId, query),
    }),
    route({
      method: 'post', path: '/contacts', tag: 'Contacts', auth: 'secret', status: 201, alsoStatus: [200],
      summary: 'Create a contact (201) or update the one with this email (200); data is merged',
      body: newContactSchema,
      response: contactWithMeta,
      handle: async ({ auth, body }) => {
        const { contact, created } = await upsertContact(p, auth.projectId, body);
        return reply({ ...contact, _meta: { isNew: created, isUpdate: !created } }, { status: created ? 201 : 200 });
      },
    }),
    route({
      method: 'get', path: '/contacts/:id', tag: 'Contacts', auth: 'secret', errors: [404],
      summary: 'One contact',
      params: idParams,
      response: contactSchema,
      handle: ({ auth, params }) => getContact(p, auth.projectId, params.id),
    }),
    route({
      method: 'get', path: '/contacts/:id/segments', tag: 'Contacts', auth: 'secret', errors: [404],
      summary: 'The segments the contact is in now (dynamic by their condition, static by membership), by name',
      params: idParams,
      response: z.array(z.object({ id: z.string(), name: z.string(), slug: z.string(), type: z.enum(['DYNAMIC', 'STATIC']) })),
      handle: ({ auth, params }) => segmentsOfContact(p, auth.projectId, params.id),
    }),
    route({
      method: 'patch', path: '/contacts/:id', tag: 'Contacts', auth: 'secret', errors: [404, 409],
      summary: 'Change email, subscription or data (merged; null removes a key)',
      params: idParams,
      body: contactPatchSchema,
      response: contactSchema,
      handle: ({ auth, params, body }) => patchContact(p, auth.projectId, params.id, body),
    }),
    route({
      method: 'delete', path: '/contacts/:id', tag: 'Contacts', auth: 'secret', status: 204, errors: [404],
      summary: 'Delete a contact with its events and segment memberships; its email records are anonymised (campaign stats stay)',
      params: idParams,
      handle: ({ auth, params }) => deleteContact(p, auth.projectId, params.id),
    }),
  ];
}
