import { z } from 'zod';
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
        'Every response is an envelope with `success`; errors carry `error.code` and `error.requestId`.',
    },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      securitySchemes: {
        secretKey: { type: 'http', scheme: 'bearer', description: 'Project secret key (`sk_…`).' },
        publicKey: { type: 'http', scheme: 'bearer', description: 'Project public key (`pk_…`), POST /v1/track only.' },
        userToken: { type: 'http', scheme: 'bearer', description: 'Session token from /auth/login or /auth/signup.' },
      },
      schemas: { Error: jsonSchema(errorEnvelopeSchema, 'output') },
    },
  };
}

const SECURITY: Record<RouteSpec['auth'], unknown[]> = {
  none: [],
  user: [{ userToken: [] }],
  secret: [{ secretKey: [] }],
  key: [{ secretKey: [] }, { publicKey: [] }],
};

const ERRORS_BY_AUTH: Record<RouteSpec['auth'], number[]> = {
  none: [422],
  user: [401, 422],
  secret: [401, 403, 422],
  key: [401, 422],
};

const errorResponse = {
  description: 'Error envelope',
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
};

/** The two routes outside the route list: no credential, no envelope on success. */
function systemOperation(operationId: string, summary: string): Record<string, unknown> {
  return {
    summary,
    tags: ['System'],
    operationId,
    security: [],
    responses: {
      '200': { description: 'OK', content: { 'application/json': { schema: { type: 'object' } } } },
      '500': errorResponse,
    },
  };
}

function operation(spec: RouteSpec): Record<string, unknown> {
  const responses: Record<string, unknown> = {};
  for (const status of [spec.status ?? 200, ...(spec.alsoStatus ?? [])]) {
    responses[String(status)] =
      status === 204
        ? { description: 'No content' }
        : {
            description: 'Success',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['success', 'data'],
                  properties: {
                    success: { const: true },
                    data: spec.response ? jsonSchema(spec.response, 'output') : {},
                    message: { type: 'string' },
                  },
                },
              },
            },
          };
  }
  const errorStatuses = new Set([...ERRORS_BY_AUTH[spec.auth], ...(spec.errors ?? []), 500]);
  if (spec.body || spec.upload) errorStatuses.add(413);
  if (!spec.unmetered) errorStatuses.add(429);
  for (const code of [...errorStatuses].sort()) {
    responses[String(code)] = errorResponse;
  }
  return {
    summary: spec.summary,
    tags: [spec.tag],
    operationId: `${spec.method}${spec.path.replace(/[/:{}-]+(\w)?/g, (_, c: string | undefined) => (c ? c.toUpperCase() : ''))}`,
    security: SECURITY[spec.auth],
    parameters: [...parameters(spec.params, 'path'), ...parameters(spec.query, 'query')],
    ...(spec.body || spec.upload ? { requestBody: requestBody(spec) } : {}),
    responses,
  };
}

function requestBody(spec: RouteSpec): Record<string, unknown> {
  if (spec.upload) {
    const { field } = spec.upload;
    return {
      required: true,
      content: {
        'multipart/form-data': {
          schema: { type: 'object', required: [field], properties: { [field]: { type: 'string', format: 'binary' } } },
        },
      },
    };
  }
  return { required: true, content: { 'application/json': { schema: jsonSchema(spec.body!, 'input') } } };
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
