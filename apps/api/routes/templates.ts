import { z } from 'zod';
import {
  createTemplateSchema,
  listTemplatesQuery,
  patchTemplateSchema,
  templateSchema,
  testTemplateSchema,
} from '../../../domain/templates/schema.ts';
import { createTemplate, deleteTemplate, getTemplate, listTemplates, patchTemplate, sendTemplateTest } from '../../../domain/templates/service.ts';
import { LIMITS } from '../../../domain/limits.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { reply, route, type RouteSpec } from '../http/route.ts';
import { idParams } from './common.ts';

/** Bodies up to 512 KB of UTF-8 fit, even with JSON escaping; larger requests are a 413. */
const TEMPLATE_BODY_LIMIT = LIMITS.body.contentBytes;

export function templateRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/templates', tag: 'Templates', auth: 'secret',
      summary: 'List templates, newest first, page-numbered; `search` matches the name, `type` filters',
      query: listTemplatesQuery,
      response: z.object({
        templates: z.array(templateSchema),
        total: z.number().int(),
        page: z.number().int(),
        pageSize: z.number().int(),
        totalPages: z.number().int(),
      }),
      handle: ({ auth, query }) => listTemplates(p, auth.projectId, query),
    }),
    route({
      method: 'post', path: '/templates', tag: 'Templates', auth: 'secret', status: 201, bodyLimit: TEMPLATE_BODY_LIMIT,
      summary: 'Create a template; `from` must be on a verified domain of the project',
      body: createTemplateSchema,
      response: templateSchema,
      handle: ({ auth, body }) => createTemplate(p, auth.projectId, body),
    }),
    route({
      method: 'get', path: '/templates/:id', tag: 'Templates', auth: 'secret', errors: [404],
      summary: 'One template',
      params: idParams,
      response: templateSchema,
      handle: ({ auth, params }) => getTemplate(p, auth.projectId, params.id),
    }),
    route({
      method: 'patch', path: '/templates/:id', tag: 'Templates', auth: 'secret', errors: [404], bodyLimit: TEMPLATE_BODY_LIMIT,
      summary: 'Change the given fields (null clears fromName, replyTo, description); a new `from` must be verified',
      params: idParams,
      body: patchTemplateSchema,
      response: templateSchema,
      handle: ({ auth, params, body }) => patchTemplate(p, auth.projectId, params.id, body),
    }),
    route({
      method: 'post', path: '/templates/:id/test', tag: 'Templates', auth: 'secret', errors: [404],
      summary: 'Send one test email of the template now to `email`: subject prefixed "[TEST]", rendered with the data of the contact with that address (none for another address, which does not become a contact)',
      params: idParams,
      body: testTemplateSchema,
      response: z.object({ email: z.string().describe('The email id'), to: z.string() }),
      handle: async ({ auth, params, body }) => reply(await sendTemplateTest(p, auth.projectId, params.id, body.email), { message: `Test email sent to ${body.email}` }),
    }),
    route({
      method: 'delete', path: '/templates/:id', tag: 'Templates', auth: 'secret', status: 204, errors: [404],
      summary: 'Delete a template; campaigns and workflow steps that use it stop working',
      params: idParams,
      handle: ({ auth, params }) => deleteTemplate(p, auth.projectId, params.id),
    }),
  ];
}
