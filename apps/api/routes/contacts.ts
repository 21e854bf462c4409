import { z } from 'zod';
import { contactDataSchema, contactSchema, emailSchema } from '../../../domain/contacts/schema.ts';
import { deleteContact, getContact, listContacts, patchContact, upsertContact } from '../../../domain/contacts/service.ts';
import { LIMITS } from '../../../domain/limits.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { reply, route, type RouteSpec } from '../http/route.ts';
import { idParams, limitParam } from './common.ts';

const contactWithMeta = contactSchema.extend({ _meta: z.object({ isNew: z.boolean(), isUpdate: z.boolean() }) });

export function contactRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/contacts', tag: 'Contacts', auth: 'secret',
      summary: 'List contacts, newest first, with cursor paging and partial-match email search',
      query: z.object({
        limit: limitParam(),
        cursor: z.string().max(100).optional(),
        search: z.string().max(LIMITS.search).optional(),
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
      body: z.strictObject({ email: emailSchema, subscribed: z.boolean().optional(), data: contactDataSchema.optional() }),
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
      method: 'patch', path: '/contacts/:id', tag: 'Contacts', auth: 'secret', errors: [404, 409],
      summary: 'Change email, subscription or data (merged; null removes a key)',
      params: idParams,
      body: z.strictObject({ email: emailSchema.optional(), subscribed: z.boolean().optional(), data: contactDataSchema.optional() }),
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
