import { describe, expect, it } from 'vitest';
import { apiRoutes } from '../../apps/api/app.ts';
import { ERROR_CODES, errorStatuses, openApiDocument } from '../../apps/api/http/openapi.ts';
import type { RouteSpec } from '../../apps/api/http/route.ts';
import type { Platform } from '../../runtime/platform.ts';

/**
 * The API reference is generated from the routes; this walks it and fails for any route that
 * does not say what it answers, how it fails, or what credential it takes. A route added later
 * is checked the moment it is in `apiRoutes`.
 */
// Building the route list touches no part of the platform: the handlers close over it.
const routes = apiRoutes({} as Platform);
const doc = openApiDocument(routes, 'http://localhost:3000') as any;
const openApiPath = (spec: RouteSpec) => spec.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const where = (spec: RouteSpec) => `${spec.method.toUpperCase()} ${spec.path}`;

const SCHEMES: Record<RouteSpec['auth'], string[][]> = {
  none: [],
  user: [['userToken'], ['sessionCookie']],
  secret: [['secretKey'], ['sessionCookie']],
  key: [['secretKey'], ['publicKey'], ['sessionCookie']],
};

/** Follows a local `$ref` (`#/components/...`), failing when it points nowhere. */
function resolve(ref: string): any {
  expect(ref.startsWith('#/'), ref).toBe(true);
  const target = ref
    .slice(2)
    .split('/')
    .reduce<any>((node, key) => node?.[key], doc);
  expect(target, `${ref} resolves`).toBeDefined();
  return target;
}

function allRefs(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((n) => allRefs(n, found));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.push(value);
      else allRefs(value, found);
    }
  }
  return found;
}

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1 with an operation for every route, each with a unique operationId', () => {
    expect(doc.openapi).toBe('3.1.0');
    for (const spec of routes) expect(doc.paths[openApiPath(spec)]?.[spec.method], where(spec)).toBeDefined();
    const ids = routes.map((spec) => doc.paths[openApiPath(spec)][spec.method].operationId);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('every $ref in it resolves', () => {
    for (const ref of new Set(allRefs(doc))) resolve(ref);
  });

  it("every route's security names the credential it takes, from the declared schemes", () => {
    const schemes = doc.components.securitySchemes;
    expect(Object.keys(schemes).sort()).toEqual(['publicKey', 'secretKey', 'sessionCookie', 'userToken']);
    for (const [name, s] of Object.entries<any>(schemes)) {
      const kind = name === 'sessionCookie' ? { type: 'apiKey', in: 'cookie', name: 'mailroom_session' } : { type: 'http', scheme: 'bearer' };
      expect(s).toMatchObject({ ...kind, description: expect.any(String) });
    }
    for (const spec of routes) {
      const op = doc.paths[openApiPath(spec)][spec.method];
      expect(Array.isArray(op.security), `${where(spec)} has security`).toBe(true);
      expect(op.security.map((s: object) => Object.keys(s)), where(spec)).toEqual(SCHEMES[spec.auth]);
    }
  });

  it('every route has a success response with a schema for its data (204: no body)', () => {
    const missing: string[] = [];
    for (const spec of routes) {
      const op = doc.paths[openApiPath(spec)][spec.method];
      const successes = Object.keys(op.responses).filter((s) => /^2\d\d$/.test(s));
      expect(successes.length, where(spec)).toBeGreaterThan(0);
      expect(successes).toContain(String(spec.status ?? 200));
      for (const status of successes) {
        const response = op.responses[status];
        expect(response.description, `${where(spec)} ${status}`).toEqual(expect.any(String));
        if (status === '204') {
          expect(response.content, `${where(spec)} 204 has no body`).toBeUndefined();
          continue;
        }
        if (spec.rawResponse) {
          // The bytes themselves (a raw message), not the envelope.
          expect(response.content, `${where(spec)} ${status}`).toEqual({ [spec.rawResponse.contentType]: { schema: { type: 'string', format: 'binary' } } });
          continue;
        }
        const schema = response.content?.['application/json']?.schema;
        expect(schema?.properties?.success, `${where(spec)} ${status}`).toEqual({ const: true });
        const data = schema?.properties?.data;
        // `{}` is what a route without a `response` schema gets: it documents nothing.
        if (!data || Object.keys(data).length === 0) missing.push(`${where(spec)} ${status}`);
      }
    }
    expect(missing, 'routes without a response schema').toEqual([]);
  });

  it('every route documents the errors it can answer with, each as the error envelope', () => {
    const envelope = doc.components.schemas.Error;
    expect(envelope.required).toEqual(expect.arrayContaining(['success', 'error', 'timestamp']));
    expect(envelope.properties.error.required).toEqual(expect.arrayContaining(['code', 'message', 'statusCode', 'requestId']));
    for (const spec of routes) {
      const op = doc.paths[openApiPath(spec)][spec.method];
      const errors = Object.keys(op.responses).filter((s) => /^[45]\d\d$/.test(s)).map(Number);
      const inputs = Boolean(spec.params || spec.query || spec.body || spec.upload);
      const expected = [
        500,
        ...(spec.auth !== 'none' ? [401] : []),
        ...(spec.auth === 'secret' || spec.needs?.admin || spec.needs?.verifiedEmail ? [403] : []),
        ...(spec.params ? [404] : []),
        ...(inputs ? [422] : []),
        ...(spec.body || spec.upload ? [413] : []),
        ...(spec.unmetered ? [] : [429]),
      ];
      expect(errors, where(spec)).toEqual(expect.arrayContaining(expected));
      expect(errors, where(spec)).toEqual(errorStatuses(spec));
      for (const status of errors) {
        const response = op.responses[status];
        expect(response.content['application/json'].schema, `${where(spec)} ${status}`).toEqual({ $ref: '#/components/schemas/Error' });
        // The description names the codes a client can branch on.
        for (const code of ERROR_CODES[status].codes) expect(response.description, `${where(spec)} ${status}`).toContain(code);
      }
    }
  });

  it('every path parameter is declared, and every declared input has a schema', () => {
    for (const spec of routes) {
      const op = doc.paths[openApiPath(spec)][spec.method];
      const inPath = [...openApiPath(spec).matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const declared = op.parameters.filter((p: any) => p.in === 'path');
      expect(declared.map((p: any) => p.name).sort(), where(spec)).toEqual(inPath.sort());
      for (const p of op.parameters) {
        expect(p.schema, `${where(spec)} ${p.name}`).toBeDefined();
        if (p.in === 'path') expect(p.required).toBe(true);
      }
      if (spec.body || spec.upload || spec.rawBody) {
        const content = op.requestBody?.content ?? {};
        const media = spec.upload ? 'multipart/form-data' : spec.rawBody ? '*/*' : 'application/json';
        expect(content[media]?.schema, `${where(spec)} request body`).toBeDefined();
      } else {
        expect(op.requestBody, `${where(spec)} takes no body`).toBeUndefined();
      }
    }
  });
});

describe('the lists say how they page', () => {
  it('documents `nextCursor` and `hasMore` beside `data` on the event lists, and a `cursor` query parameter', () => {
    for (const path of ['/events', '/events/contact/{contactId}']) {
      const op = doc.paths[path].get;
      const envelope = op.responses['200'].content['application/json'].schema;
      expect(envelope.required, path).toEqual(expect.arrayContaining(['nextCursor', 'hasMore']));
      expect(envelope.properties.data.type, path).toBe('array');
      expect(op.parameters.map((p: { name: string }) => p.name), path).toContain('cursor');
    }
    expect(doc.paths['/contacts'].get.responses['200'].content['application/json'].schema.properties.nextCursor).toBeUndefined();
    expect(doc.info.description).toContain('{items, nextCursor, hasMore, total}');
  });
});
