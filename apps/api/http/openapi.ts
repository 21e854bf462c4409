import { z } from 'zod';
import { LIMITS } from '../../../domain/limits.ts';
import { errorEnvelopeSchema } from './errors.ts';
import type { RouteSpec } from './route.ts';

/** The OpenAPI 3.1 document, generated from the same zod schemas the routes validate with. */
export function openApiDocument(routes: RouteSpec[], serverUrl: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of routes) {
    const path = spec.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    (paths[path] ??= {})[spec.method] = operation(spec);
  }
  paths['/health'] = { get: systemOperation('getHealth', 'Readiness: 200 once the instance serves requests') };
  paths['/openapi.json'] = { get: systemOperation('getOpenapi', 'This document (OpenAPI 3.1)') };
  return {
    openapi: '3.1.0',
    info: {
      title: 'mailroom API',
      version: '0.1.0',
      description:
        'Transactional email, event tracking, contacts, segments, campaigns and workflows. ' +
        'Every response is an envelope with `success`; errors carry `error.code` and `error.requestId`.\n\n' +
        LIST_ENVELOPES,
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      securitySchemes: {
        secretKey: {
          type: 'http', scheme: 'bearer', bearerFormat: 'sk_…',
          description: 'Project secret key (`sk_…`): every Dashboard API endpoint, /v1/send and /v1/track. Server-side only.',
        },
        publicKey: {
          type: 'http', scheme: 'bearer', bearerFormat: 'pk_…',
          description: 'Project public key (`pk_…`): POST /v1/track only (403 FORBIDDEN elsewhere). Safe in browser code.',
        },
        userToken: {
          type: 'http', scheme: 'bearer', bearerFormat: 'sess_…',
          description: 'Session token from POST /auth/login or /auth/signup: accounts, projects and domains.',
        },
        sessionCookie: {
          type: 'apiKey', in: 'cookie', name: 'mailroom_session',
          description:
            'The dashboard\'s session cookie, set by POST /auth/session: stands in for the session token, and for the secret key ' +
            'with `X-Project-Id: <a project of the user>` (403 otherwise). POST, PUT, PATCH and DELETE also need ' +
            '`X-CSRF-Token` (the `csrfToken` of GET /auth/session; 403 without it).',
        },
      },
      schemas: { Error: jsonSchema(errorEnvelopeSchema, 'output') },
    },
  };
}

/** Which lists page how, and in which shape (docs/decisions.md "Lists and paging"). */
const LIST_ENVELOPES =
  'Lists: `GET /contacts` pages by `limit` and `cursor` and answers `{contacts, cursor, hasMore, total}` (the spec\'s shape). ' +
  '`GET /events`, `GET /events/contact/{contactId}` and `GET /segments` (every segment without `limit` and `cursor`) page by `limit` and `cursor` with `data` the array and ' +
  '`nextCursor` and `hasMore` beside `data` in the envelope (`data` stays the array existing clients read). ' +
  'Lists added later with `limit` and `cursor` use the generic list envelope `{items, nextCursor, hasMore, total}` in `data`. ' +
  '`GET /templates`, `/campaigns`, `/workflows`, `/workflows/{id}/executions`, `/segments/{id}/contacts` page by `page` and `pageSize`. ' +
  'Every cursor is opaque: pass the one the previous page returned; any other is a 422 on `cursor`.';

/** The envelope fields of a list whose `data` is the array itself (RouteSpec.cursorPage). */
const CURSOR_PAGE = {
  nextCursor: {
    type: ['string', 'null'],
    description: 'Opaque; pass it as `cursor` for the next page. Null on the last page.',
  },
  hasMore: { type: 'boolean', description: 'False on the last page.' },
};

const SECURITY: Record<RouteSpec['auth'], unknown[]> = {
  none: [],
  user: [{ userToken: [] }, { sessionCookie: [] }],
  secret: [{ secretKey: [] }, { sessionCookie: [] }],
  key: [{ secretKey: [] }, { publicKey: [] }, { sessionCookie: [] }],
};

/** Every error status the API answers with, the codes (`error.code`) it carries, and when. */
export const ERROR_CODES: Record<number, { codes: string[]; when: string }> = {
  401: { codes: ['UNAUTHORIZED'], when: 'Missing or invalid key or session token' },
  403: {
    codes: ['FORBIDDEN', 'EMAIL_VERIFICATION_REQUIRED', 'DOMAIN_NOT_VERIFIED'],
    when: 'Wrong key kind, not an admin of the project, unverified email address, an unverified sender domain, or a session-cookie call without X-CSRF-Token or for a project the user is not in',
  },
  404: { codes: ['NOT_FOUND'], when: 'No such object in this project (objects of other projects are not visible)' },
  409: { codes: ['CONFLICT', 'INVALID_STATE'], when: 'Clashes with existing data, or the object is in a state that forbids this' },
  413: { codes: ['PAYLOAD_TOO_LARGE'], when: 'The request body or upload is larger than this endpoint takes' },
  422: { codes: ['VALIDATION_ERROR'], when: 'The request is invalid; `error.errors` names each field' },
  429: { codes: ['RATE_LIMIT_EXCEEDED'], when: 'Over the per-project request rate; retry after `Retry-After` seconds' },
  500: { codes: ['INTERNAL_ERROR'], when: 'Unexpected server error; report the requestId' },
};

/** An error response: the envelope (components.schemas.Error), its codes named in the description. */
function errorRef(status: number): Record<string, unknown> {
  const e = ERROR_CODES[status];
  return {
    description: `${e.when}: ${e.codes.join(' or ')}`,
    ...(status === 429
      ? { headers: { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer', minimum: 1 } } } }
      : {}),
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
}

/**
 * The error statuses a route can answer with: what its credential, inputs and metering imply,
 * plus what the route declares in `errors` (domain rules: 404 on a body id, 409).
 */
export function errorStatuses(spec: RouteSpec): number[] {
  const statuses = new Set([...(spec.errors ?? []), 500]);
  if (spec.auth !== 'none') statuses.add(401);
  // 403 also stands for a cookie call without its CSRF token (unsafe methods) or project (key routes).
  const cookieCanRefuse = spec.auth === 'key' || (spec.auth === 'user' && spec.method !== 'get');
  if (spec.auth === 'secret' || cookieCanRefuse || spec.needs?.admin || spec.needs?.verifiedEmail) statuses.add(403);
  // Any id in the path may name nothing in the caller's project.
  if (spec.params) statuses.add(404);
  if (spec.params || spec.query || spec.body || spec.upload) statuses.add(422);
  if (spec.body || spec.upload || spec.rawBody) statuses.add(413);
  if (!spec.unmetered) statuses.add(429);
  return [...statuses].sort((a, b) => a - b);
}

/** The two routes outside the route list: no credential, no envelope on success. */
function systemOperation(operationId: string, summary: string): Record<string, unknown> {
  return {
    summary,
    tags: ['System'],
    operationId,
    security: [],
    responses: {
      '200': { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } },
      '500': errorRef(500),
    },
  };
}

function operation(spec: RouteSpec): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const status of [spec.status ?? 200, ...(spec.alsoStatus ?? [])]) {
    responses[String(status)] =
      status === 204
        ? { description: 'No content' }
        : spec.rawResponse
          ? { description: spec.rawResponse.description, content: { [spec.rawResponse.contentType]: { schema: { type: 'string', format: 'binary' } } } }
          : {
            description: 'Success',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['success', 'data', ...(spec.cursorPage ? ['nextCursor', 'hasMore'] : [])],
                  properties: {
                    success: { const: true },
                    data: spec.response ? jsonSchema(spec.response, 'output') : {},
                    message: { type: 'string' },
                    ...(spec.cursorPage ? CURSOR_PAGE : {}),
                  },
                  additionalProperties: false,
                },
              },
            },
          };
  }
  for (const status of errorStatuses(spec)) responses[String(status)] = errorRef(status);
  const needs = [
    spec.needs?.admin ? 'the admin role on the project' : '',
    spec.needs?.verifiedEmail ? 'a verified email address' : '',
  ].filter(Boolean);
  return {
    summary: spec.summary,
    ...(needs.length || spec.description ? { description: [spec.description, needs.length ? `Needs ${needs.join(' and ')}.` : ''].filter(Boolean).join(' ') } : {}),
    tags: [spec.tag],
    operationId: `${spec.method}${spec.path.replace(/[/:{}-]+(\w)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    security: SECURITY[spec.auth],
    parameters: [...parameters(spec.params, 'path'), ...parameters(spec.query, 'query')],
    ...(spec.body || spec.upload || spec.rawBody ? { requestBody: requestBody(spec) } : {}),
    responses,
  };
}

function requestBody(spec: RouteSpec): Record<string, unknown> {
  if (spec.rawBody) {
    return {
      required: true,
      description: `${spec.rawBody.description}, at most ${spec.rawBody.maxBytes} bytes (413 PAYLOAD_TOO_LARGE beyond)`,
      content: { '*/*': { schema: { type: 'string' } } },
    };
  }
  if (spec.upload) {
    const { field } = spec.upload;
    return {
      required: true,
      description: `One file in \`${field}\`, at most ${spec.upload.maxBytes} bytes (413 PAYLOAD_TOO_LARGE beyond)`,
      content: {
        'multipart/form-data': {
          schema: { type: 'object', required: [field], properties: { [field]: { type: 'string', format: 'binary' } } },
        },
      },
    };
  }
  return {
    required: !spec.bodyOptional,
    description: `JSON, at most ${spec.bodyLimit ?? LIMITS.body.defaultBytes} bytes (413 PAYLOAD_TOO_LARGE beyond)`,
    content: { 'application/json': { schema: jsonSchema(spec.body!, 'input') } },
  };
}

function parameters(schema: z.ZodType | undefined, where: 'path' | 'query'): unknown[] {
  if (!schema) return [];
  const object = jsonSchema(schema, 'input') as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(object.properties ?? {}).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' || (object.required ?? []).includes(name),
    schema: s,
  }));
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const out = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}
