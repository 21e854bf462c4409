import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, verifiedUser, type ProjectAccess } from '../harness/accounts.ts';
import type { ApiResponse } from '../harness/client.ts';
import { startInstance, type Instance } from '../harness/instance.ts';

const ERROR_KEYS = ['code', 'message', 'statusCode', 'requestId', 'suggestion'];

/**
 * The spec's error envelope: success false, error.{code,message,statusCode,requestId,suggestion},
 * an ISO 8601 timestamp, `errors` only on VALIDATION_ERROR, and X-Request-Id equal to error.requestId.
 */
function expectEnvelope(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers.get('content-type') ?? '').toMatch(/^application\/json/);
  expect(res.body).toEqual({ success: false, error: expect.any(Object), timestamp: expect.any(String) });
  const { error } = res.body;
  expect(error.code).toBe(code);
  expect(error.statusCode).toBe(status);
  for (const key of ['code', 'message', 'requestId', 'suggestion']) {
    expect(typeof error[key], key).toBe('string');
    expect(error[key].length, key).toBeGreaterThan(0);
  }
  expect(Object.keys(error).sort()).toEqual(
    (code === 'VALIDATION_ERROR' ? [...ERROR_KEYS, 'errors'] : ERROR_KEYS).sort(),
  );
  if (code === 'VALIDATION_ERROR') {
    expect(error.errors.length).toBeGreaterThan(0);
    for (const e of error.errors) {
      expect(Object.keys(e).sort()).toEqual(['code', 'field', 'message']);
      for (const v of Object.values(e)) expect(typeof v === 'string' && v.length > 0).toBe(true);
    }
  }
  expect(res.headers.get('x-request-id')).toBe(error.requestId);
  expect(new Date(res.body.timestamp).toISOString()).toBe(res.body.timestamp);
  expect(Math.abs(Date.parse(res.body.timestamp) - Date.now())).toBeLessThan(60_000);
}

const fieldErrors = (res: ApiResponse): { field: string; message: string; code: string }[] => res.body.error.errors;
const fieldsOf = (res: ApiResponse): string[] => fieldErrors(res).map((e) => e.field);

describe('the HTTP envelope', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let other: ProjectAccess;

  beforeAll(async () => {
    instance = await startInstance();
    [project, other] = await Promise.all([newProject(instance, 'Envelope'), newProject(instance, 'Other')]);
  });
  afterAll(() => instance.dispose());

  const totalContacts = async (p: ProjectAccess = project): Promise<number> => {
    const res = await p.api.get('/contacts');
    expect(res.status).toBe(200);
    return res.body.data.total;
  };

  it('POST /v1/track answers browsers cross-origin (the public key is meant for browser code)', async () => {
    const preflight = await fetch(`${instance.url}/v1/track`, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    expect(preflight.headers.get('access-control-allow-headers')?.toLowerCase()).toContain('authorization');
    const tracked = await fetch(`${instance.url}/v1/track`, {
      method: 'POST',
      headers: { origin: 'https://shop.example', authorization: `Bearer ${project.publicKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'browser@example.com', event: 'page-viewed' }),
    });
    expect(tracked.status).toBe(200);
    expect(tracked.headers.get('access-control-allow-origin')).toBe('*');
    // Dashboard endpoints take the secret key, which never belongs in a browser: no CORS there.
    const contacts = await fetch(`${instance.url}/contacts`, { headers: { origin: 'https://shop.example', authorization: `Bearer ${project.secretKey}` } });
    expect(contacts.headers.get('access-control-allow-origin')).toBeNull();
  });

  describe('errors', () => {
    it('every kind of error has the same envelope, and every request id is unique', async () => {
      const contact = await other.api.post('/contacts', { email: 'other-project@example.com' });
      expect(contact.status).toBe(201);

      const cases: [string, () => Promise<ApiResponse>, number, string][] = [
        ['no credential', () => instance.api.get('/contacts'), 401, 'UNAUTHORIZED'],
        ['unknown key', () => instance.api.get('/contacts', { auth: 'sk_unknown' }), 401, 'UNAUTHORIZED'],
        ['public key on a secret endpoint', () => instance.api.get('/contacts', { auth: project.publicKey }), 403, 'FORBIDDEN'],
        ['unknown contact', () => project.api.get('/contacts/does-not-exist'), 404, 'NOT_FOUND'],
        ["another project's contact", () => project.api.get(`/contacts/${contact.body.data.id}`), 404, 'NOT_FOUND'],
        ['unknown route', () => instance.api.get('/no/such/route'), 404, 'NOT_FOUND'],
        ['invalid body', () => project.api.post('/contacts', { email: 'nope' }), 422, 'VALIDATION_ERROR'],
        ['invalid query', () => project.api.get('/contacts?limit=0'), 422, 'VALIDATION_ERROR'],
        ['wrong password', () => instance.api.post('/auth/login', { email: project.email, password: 'wrong password' }), 401, 'UNAUTHORIZED'],
      ];
      const ids: string[] = [];
      for (const [what, call, status, code] of cases) {
        const res = await call();
        try {
          expectEnvelope(res, status, code);
        } catch (err) {
          throw new Error(`${what}: ${(err as Error).message}`);
        }
        ids.push(res.body.error.requestId);
      }
      // The same request twice gets two ids too.
      for (let i = 0; i < 5; i++) ids.push((await instance.api.get('/contacts')).body.error.requestId);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('successes carry an X-Request-Id too, including a 204', async () => {
      const ok = await project.api.get('/contacts');
      expect(ok.body.success).toBe(true);
      const created = await project.api.post('/contacts', { email: 'to-delete@example.com' });
      const deleted = await project.api.delete(`/contacts/${created.body.data.id}`);
      expect(deleted.status).toBe(204);
      const ids = [ok, created, deleted].map((r) => r.headers.get('x-request-id'));
      for (const id of ids) expect(id).toMatch(/\S{8,}/);
      expect(new Set(ids).size).toBe(3);
    });

    it('a validation error lists every failing field with a message and a code', async () => {
      const res = await project.api.post('/contacts', { email: 'bad', subscribed: 'yes', data: { createdAt: 'x' } });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(res).sort()).toEqual(['data.createdAt', 'email', 'subscribed']);
    });

    it('malformed JSON is a 422 on field "body" with code invalid_json, never a 500 or an HTML page', async () => {
      const before = await totalContacts();
      for (const raw of ['{"email": "a@example.com",', "{'email': 'a@example.com'}", 'not json at all', '{"email":"a@example.com"}}']) {
        const res = await project.api.post('/contacts', undefined, { raw, headers: { 'content-type': 'application/json' } });
        expectEnvelope(res, 422, 'VALIDATION_ERROR');
        expect(fieldErrors(res)).toEqual([{ field: 'body', message: expect.any(String), code: 'invalid_json' }]);
      }
      // The same on an anonymous endpoint and on the public API.
      const signup = await instance.api.post('/auth/signup', undefined, { raw: '{"email":', headers: { 'content-type': 'application/json' } });
      expectEnvelope(signup, 422, 'VALIDATION_ERROR');
      expect(fieldErrors(signup)[0]).toMatchObject({ field: 'body', code: 'invalid_json' });
      const track = await project.api.post('/v1/track', undefined, { raw: '{"event"', headers: { 'content-type': 'application/json' } });
      expectEnvelope(track, 422, 'VALIDATION_ERROR');
      expect(fieldErrors(track)[0]).toMatchObject({ field: 'body', code: 'invalid_json' });
      expect(await totalContacts()).toBe(before);
    });

    it('a body that is not JSON at all is a 422 with code invalid_content_type', async () => {
      const res = await project.api.post('/contacts', undefined, {
        raw: 'email=a@example.com',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expectEnvelope(res, 422, 'VALIDATION_ERROR');
      expect(fieldErrors(res)).toEqual([{ field: 'body', message: expect.any(String), code: 'invalid_content_type' }]);
    });

    it('a JSON body over 1 MB is a 413 PAYLOAD_TOO_LARGE in the envelope; one just under is accepted', async () => {
      const before = await totalContacts();
      // 110 values of 10,000 characters: valid field by field, about 1.1 MB in all.
      const big: Record<string, string> = {};
      for (let i = 0; i < 110; i++) big[`k${i}`] = 'x'.repeat(10_000);
      const tooLarge = await project.api.post('/contacts', { email: 'huge@example.com', data: big });
      expectEnvelope(tooLarge, 413, 'PAYLOAD_TOO_LARGE');

      // Sent without a Content-Length (chunked), the limit holds too.
      const body = JSON.stringify({ email: 'huge-chunked@example.com', data: big });
      const chunked = await fetch(`${instance.url}/contacts`, {
        method: 'POST',
        headers: { authorization: `Bearer ${project.secretKey}`, 'content-type': 'application/json' },
        body: new ReadableStream({
          start(controller) {
            const bytes = new TextEncoder().encode(body);
            for (let i = 0; i < bytes.length; i += 64 * 1024) controller.enqueue(bytes.subarray(i, i + 64 * 1024));
            controller.close();
          },
        }),
        duplex: 'half',
      } as RequestInit);
      const chunkedBody = await chunked.json();
      expectEnvelope({ status: chunked.status, headers: chunked.headers, body: chunkedBody }, 413, 'PAYLOAD_TOO_LARGE');
      expect(await totalContacts()).toBe(before);

      // 100 values of 10,000 characters (the most `data` may hold) is about 1.0 MB: under the limit.
      const most: Record<string, string> = {};
      for (let i = 0; i < 100; i++) most[`k${i}`] = 'x'.repeat(10_000);
      const fits = await project.api.post('/contacts', { email: 'large-but-fine@example.com', data: most });
      expect(fits.status, JSON.stringify(fits.body).slice(0, 300)).toBe(201);
      expect(await totalContacts()).toBe(before + 1);
    });

    it('an unknown route is a 404 in the envelope, with or without credentials', async () => {
      expectEnvelope(await instance.api.get('/nothing-here'), 404, 'NOT_FOUND');
      expectEnvelope(await project.api.post('/v2/track', { email: 'a@example.com', event: 'x' }), 404, 'NOT_FOUND');
      expectEnvelope(await project.api.put('/contacts', { email: 'a@example.com' }), 404, 'NOT_FOUND');
      expectEnvelope(await project.api.get('/contacts/a/b/c'), 404, 'NOT_FOUND');
    });

    it('an unknown body field is a 422 naming it, and nothing is created', async () => {
      const before = await totalContacts();
      const typo = await project.api.post('/contacts', { email: 'typo@example.com', subscibed: false });
      expectEnvelope(typo, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(typo)).toEqual(['subscibed']);

      const track = await project.api.post('/v1/track', { email: 'typo@example.com', event: 'x', dat: { a: 1 } });
      expectEnvelope(track, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(track)).toEqual(['dat']);

      const signup = await instance.api.post('/auth/signup', { email: 'typo-user@example.com', password: 'long enough', admin: true });
      expectEnvelope(signup, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(signup)).toEqual(['admin']);

      expect(await totalContacts()).toBe(before);
      const search = await project.api.get('/contacts?search=typo');
      expect(search.body.data.contacts).toEqual([]);
    });

    it('wrong types are a 422 naming the field: no coercion of "true" or numbers', async () => {
      const before = await totalContacts();
      const numberEmail = await project.api.post('/contacts', { email: 12345 });
      expectEnvelope(numberEmail, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(numberEmail)).toEqual(['email']);

      for (const subscribed of ['true', 'false', 1, null]) {
        const res = await project.api.post('/contacts', { email: 'typed@example.com', subscribed });
        expectEnvelope(res, 422, 'VALIDATION_ERROR');
        expect(fieldsOf(res)).toEqual(['subscribed']);
      }
      const dataArray = await project.api.post('/contacts', { email: 'typed@example.com', data: ['a'] });
      expectEnvelope(dataArray, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(dataArray)).toEqual(['data']);

      const event = await project.api.post('/v1/track', { email: 'typed@example.com', event: 42 });
      expectEnvelope(event, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(event)).toEqual(['event']);

      const notObject = await project.api.post('/contacts', ['typed@example.com']);
      expectEnvelope(notObject, 422, 'VALIDATION_ERROR');

      expect(await totalContacts()).toBe(before);
    });

    it('a refused request changes nothing', async () => {
      const before = await totalContacts();
      const events = (await project.api.get('/events')).body.data.length;

      expectEnvelope(await project.api.post('/contacts', { email: 'refused@example.com', data: { email: 'x' } }), 422, 'VALIDATION_ERROR');
      expectEnvelope(await instance.api.post('/contacts', { email: 'refused@example.com' }, { auth: project.publicKey }), 403, 'FORBIDDEN');
      expectEnvelope(await instance.api.post('/contacts', { email: 'refused@example.com' }), 401, 'UNAUTHORIZED');
      // A reserved event name is refused before the contact is created.
      const reserved = await project.api.post('/v1/track', { email: 'refused@example.com', event: 'email.sent' });
      expectEnvelope(reserved, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(reserved)).toEqual(['event']);
      // A bad update leaves the contact as it was.
      const kept = await project.api.post('/contacts', { email: 'kept-as-is@example.com', data: { plan: 'free' } });
      expect(kept.status).toBe(201);
      const patch = await project.api.patch(`/contacts/${kept.body.data.id}`, { subscribed: false, data: { plan: 'pro' }, nope: 1 });
      expectEnvelope(patch, 422, 'VALIDATION_ERROR');
      const after = await project.api.get(`/contacts/${kept.body.data.id}`);
      expect(after.body.data).toMatchObject({ subscribed: true, data: { plan: 'free' } });
      expect(after.body.data.updatedAt).toBe(kept.body.data.updatedAt);

      expect(await totalContacts()).toBe(before + 1);
      expect((await project.api.get('/contacts?search=refused')).body.data.contacts).toEqual([]);
      expect((await project.api.get('/events')).body.data.length).toBe(events);
    });
  });

  describe('the OpenAPI document', () => {
    /** Every route this suite knows the API to have (method, OpenAPI path). */
    const KNOWN: [string, string][] = [
      ['post', '/auth/signup'],
      ['get', '/auth/verify'],
      ['post', '/auth/verify/resend'],
      ['post', '/auth/login'],
      ['post', '/auth/logout'],
      ['get', '/auth/me'],
      ['post', '/projects'],
      ['get', '/projects'],
      ['get', '/projects/{id}'],
      ['patch', '/projects/{id}'],
      ['post', '/projects/{id}/keys/rotate'],
      ['post', '/projects/{id}/members'],
      ['get', '/projects/{id}/members'],
      ['post', '/v1/track'],
      ['get', '/contacts'],
      ['post', '/contacts'],
      ['get', '/contacts/{id}'],
      ['patch', '/contacts/{id}'],
      ['delete', '/contacts/{id}'],
      ['post', '/contacts/import'],
      ['get', '/contacts/import/{jobId}'],
      ['post', '/contacts/bulk-subscribe'],
      ['post', '/contacts/bulk-unsubscribe'],
      ['post', '/contacts/bulk-delete'],
      ['get', '/contacts/bulk/{jobId}'],
      ['get', '/events'],
      ['get', '/events/names'],
      ['get', '/events/stats'],
      ['get', '/events/contact/{contactId}'],
      ['delete', '/events/{eventName}'],
    ];
    const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

    let doc: any;
    let operations: { method: string; path: string; op: any }[];
    beforeAll(async () => {
      const res = await instance.api.get('/openapi.json');
      expect(res.status).toBe(200);
      doc = res.body;
      operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
        Object.entries(item)
          .filter(([method]) => METHODS.includes(method))
          .map(([method, op]) => ({ method, path, op })),
      );
    });

    const concrete = (path: string) => path.replace(/\{[^}]+\}/g, 'x');
    const call = (method: string, path: string, auth?: string) =>
      instance.api.call(method.toUpperCase(), concrete(path), ['post', 'put', 'patch'].includes(method) ? {} : undefined, { auth });

    it('is OpenAPI 3.1 and documents every route the API answers', () => {
      expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
      expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
      const documented = new Set(operations.map((o) => `${o.method} ${o.path}`));
      const missing = KNOWN.map(([m, p]) => `${m} ${p}`).filter((k) => !documented.has(k));
      expect(missing).toEqual([]);
      const ids = operations.map((o) => o.op.operationId);
      expect(new Set(ids).size).toBe(ids.length);
    });

    it('the routes this suite knows are really mounted (not the unknown-route 404)', async () => {
      // What an unknown route answers, as a template for any method and path.
      const probe = await instance.api.get('/definitely/not/a/route');
      expectEnvelope(probe, 404, 'NOT_FOUND');
      const unknownMessage = (method: string, path: string) =>
        probe.body.error.message.replace('GET /definitely/not/a/route', `${method.toUpperCase()} ${path}`);
      for (const [method, path] of KNOWN) {
        const res = await call(method, path);
        const unmounted = res.status === 404 && res.body.error.message === unknownMessage(method, concrete(path));
        expect(unmounted, `${method} ${path}`).toBe(false);
      }
    });

    it("each operation's `security` is what the route really demands", async () => {
      const schemes = doc.components.securitySchemes;
      for (const { method, path, op } of operations) {
        const where = `${method} ${path}`;
        expect(Array.isArray(op.security), where).toBe(true);
        // The dashboard's cookie is an alternative to every credential (test/behaviour/dashboard-session.test.ts).
        const all: string[] = op.security.flatMap((s: Record<string, unknown>) => Object.keys(s));
        if (all.length > 0) expect(all.at(-1), where).toBe('sessionCookie');
        const names = all.filter((n) => n !== 'sessionCookie');
        for (const n of names) expect(schemes[n], `${where}: scheme ${n}`).toMatchObject({ type: 'http', scheme: 'bearer' });

        if (names.length === 0) {
          // Open: no credential is needed, so the call is not refused for want of one.
          expect((await call(method, path)).status, where).not.toBe(401);
          continue;
        }
        expect((await call(method, path)).status, `${where} without a credential`).toBe(401);
        if (names.includes('userToken')) {
          expect(names, where).toEqual(['userToken']);
          expect((await call(method, path, project.secretKey)).status, `${where} with a key`).toBe(401);
        } else {
          expect(names, where).toContain('secretKey');
          expect((await call(method, path, project.token)).status, `${where} with a session`).toBe(401);
          const withPublic = await call(method, path, project.publicKey);
          if (names.includes('publicKey')) expect([401, 403], `${where} with pk_`).not.toContain(withPublic.status);
          else expect(withPublic.status, `${where} with pk_`).toBe(403);
        }
      }
      const security = (m: string, p: string) => operations.find((o) => o.method === m && o.path === p)!.op.security;
      expect(security('post', '/auth/signup')).toEqual([]);
      expect(security('get', '/projects')).toEqual([{ userToken: [] }, { sessionCookie: [] }]);
      expect(security('get', '/contacts')).toEqual([{ secretKey: [] }, { sessionCookie: [] }]);
      expect(security('post', '/v1/track')).toEqual(expect.arrayContaining([{ secretKey: [] }, { publicKey: [] }]));
    });

    it('JSON bodies have request schemas that match what the route accepts', () => {
      const bodyOf = (m: string, p: string) => operations.find((o) => o.method === m && o.path === p)?.op.requestBody;

      const contact = bodyOf('post', '/contacts').content['application/json'].schema;
      expect(Object.keys(contact.properties).sort()).toEqual(['data', 'email', 'subscribed']);
      expect(contact.required).toEqual(['email']);
      expect(contact.additionalProperties).toBe(false);
      expect(contact.properties.subscribed.type).toBe('boolean');

      const track = bodyOf('post', '/v1/track').content['application/json'].schema;
      expect(track.required.sort()).toEqual(['email', 'event']);
      expect(track.additionalProperties).toBe(false);

      const signup = bodyOf('post', '/auth/signup').content['application/json'].schema;
      expect(signup.required.sort()).toEqual(['email', 'password']);
      expect(signup.properties.password.minLength).toBe(8);

      const members = bodyOf('post', '/projects/{id}/members').content['application/json'].schema;
      expect(members.properties.role.enum.sort()).toEqual(['ADMIN', 'MEMBER']);

      const bulk = bodyOf('post', '/contacts/bulk-delete').content['application/json'].schema;
      expect(bulk.properties.contactIds).toMatchObject({ type: 'array', maxItems: 1000 });

      const upload = bodyOf('post', '/contacts/import').content['multipart/form-data'].schema;
      expect(upload.required).toEqual(['file']);

      // Every write that takes a JSON body documents one; GETs and DELETEs document none.
      for (const { method, path, op } of operations) {
        // The spec gives one DELETE a body: removing static segment members by email.
        const deleteWithBody = method === 'delete' && path === '/segments/{id}/members';
        if (method === 'get' || (method === 'delete' && !deleteWithBody)) expect(op.requestBody, `${method} ${path}`).toBeUndefined();
        if (op.requestBody) {
          const content = op.requestBody.content;
          // A relay's webhook takes its body as bytes (the signature covers them exactly).
          if (content['*/*']) expect(content['*/*'].schema.type, `${method} ${path}`).toBe('string');
          else expect((content['application/json'] ?? content['multipart/form-data'])?.schema?.type, `${method} ${path}`).toBe('object');
        }
      }
      for (const [m, p] of [['post', '/contacts'], ['patch', '/contacts/{id}'], ['post', '/projects'], ['patch', '/projects/{id}'], ['post', '/auth/login'], ['post', '/contacts/bulk-subscribe']]) {
        expect(bodyOf(m!, p!)?.content['application/json'], `${m} ${p}`).toBeDefined();
      }
    });

    it('path and query parameters are documented', () => {
      const paramsOf = (m: string, p: string) => operations.find((o) => o.method === m && o.path === p)!.op.parameters;
      expect(paramsOf('get', '/contacts/{id}')).toEqual([expect.objectContaining({ name: 'id', in: 'path', required: true })]);
      expect(paramsOf('get', '/contacts').map((x: { name: string; in: string }) => `${x.in}:${x.name}`).sort()).toEqual([
        'query:cursor',
        'query:limit',
        'query:search',
        'query:subscribed',
      ]);
      for (const { method, path, op } of operations) {
        const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((x) => x[1]);
        const documented = (op.parameters ?? []).filter((x: { in: string }) => x.in === 'path').map((x: { name: string }) => x.name);
        expect(documented.sort(), `${method} ${path}`).toEqual(inPath.sort());
      }
    });

    it('error responses reference the Error schema, which describes the envelope', async () => {
      const error = doc.components.schemas.Error;
      expect(error.required.sort()).toEqual(['error', 'success', 'timestamp']);
      expect(error.properties.success).toMatchObject({ const: false });
      expect(error.properties.error.required).toEqual(expect.arrayContaining(['code', 'message', 'statusCode', 'requestId']));
      expect(Object.keys(error.properties.error.properties).sort()).toEqual(
        ['code', 'errors', 'message', 'requestId', 'statusCode', 'suggestion'].sort(),
      );
      expect(error.properties.error.properties.errors.items.required.sort()).toEqual(['code', 'field', 'message']);

      const statusesOf = (m: string, p: string) => Object.keys(operations.find((o) => o.method === m && o.path === p)!.op.responses);
      for (const { method, path, op } of operations) {
        const where = `${method} ${path}`;
        const statuses = Object.keys(op.responses);
        const errors = statuses.filter((s) => Number(s) >= 400);
        expect(errors.length, where).toBeGreaterThan(0);
        for (const s of errors) {
          expect(op.responses[s].content['application/json'].schema, `${where} ${s}`).toEqual({ $ref: '#/components/schemas/Error' });
        }
        expect(statuses.some((s) => /^2\d\d$/.test(s)), where).toBe(true);
        if (op.security.length > 0) expect(errors, where).toContain('401');
        if (op.requestBody) expect(errors, where).toEqual(expect.arrayContaining(['413', '422']));
      }
      // Every route of this suite is metered, so each documents the 429.
      for (const [m, p] of KNOWN) expect(statusesOf(m, p), `${m} ${p}`).toContain('429');
      expect(statusesOf('get', '/contacts')).toContain('403');
      expect(statusesOf('get', '/contacts/{id}')).toContain('404');
      expect(statusesOf('post', '/projects/{id}/members')).toContain('409');
      expect(statusesOf('post', '/auth/signup')).not.toContain('409'); // an address with an account gets the 201 too
      expect(statusesOf('post', '/contacts')).toEqual(expect.arrayContaining(['200', '201']));

      // A real error response has every property the schema requires.
      const real = await instance.api.get('/contacts');
      for (const key of error.required) expect(real.body).toHaveProperty(key);
      for (const key of error.properties.error.required) expect(real.body.error).toHaveProperty(key);
    });
  });
});

describe('the API rate limit (API_RATE_PER_MINUTE=5)', () => {
  type Keys = { secretKey: string; publicKey: string };
  let instance: Instance;
  let owner: Awaited<ReturnType<typeof verifiedUser>>;
  let pa: Keys;
  let pb: Keys;
  beforeAll(async () => {
    instance = await startInstance({ env: { API_RATE_PER_MINUTE: '5' } });
    // One user (signup, verify, login: 3 of the address's 5 anonymous calls) with two projects
    // (2 of the user's 5 session calls). Every window starts at its first call, so the whole
    // describe runs well inside one minute.
    owner = await verifiedUser(instance);
    const created: Keys[] = [];
    for (const name of ['A', 'B']) {
      const res = await instance.api.post('/projects', { name }, { auth: owner.token });
      expect(res.status).toBe(201);
      created.push(res.body.data);
    }
    [pa, pb] = created as [Keys, Keys];
  });
  afterAll(() => instance.dispose());

  it("the 6th call of a project is a 429 with Retry-After, while another project's key still works", async () => {
    const apiA = instance.api.as(pa.secretKey);
    const remaining: (string | null)[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await apiA.get('/contacts');
      expect(res.status, `call ${i + 1}`).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('5');
      remaining.push(res.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).toEqual(['4', '3', '2', '1', '0']);

    const refused = await apiA.get('/contacts');
    expectEnvelope(refused, 429, 'RATE_LIMIT_EXCEEDED');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers.get('x-ratelimit-limit')).toBe('5');
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');

    // The budget is the project's, not the key's: its public key is out of budget too, and so are writes.
    const viaPublic = await instance.api.post('/v1/track', { email: 'late@example.com', event: 'x' }, { auth: pa.publicKey });
    expectEnvelope(viaPublic, 429, 'RATE_LIMIT_EXCEEDED');
    expectEnvelope(await apiA.post('/contacts', { email: 'late@example.com' }), 429, 'RATE_LIMIT_EXCEEDED');

    // Another project has its own budget.
    const apiB = instance.api.as(pb.secretKey);
    const other = await apiB.get('/contacts');
    expect(other.status).toBe(200);
    expect(other.body.data.total).toBe(0);
    expect(other.headers.get('x-ratelimit-limit')).toBe('5');
    expect(other.headers.get('x-ratelimit-remaining')).toBe('4');
    const tracked = await instance.api.post('/v1/track', { email: 'b@example.com', event: 'x' }, { auth: pb.publicKey });
    expect(tracked.status).toBe(200);
    expect(tracked.headers.get('x-ratelimit-remaining')).toBe('3');
  });

  it("session calls draw from the user's budget, not from their projects'", async () => {
    // 2 of the owner's 5 session calls went on creating the projects.
    for (const left of ['2', '1', '0']) {
      const res = await instance.api.get('/projects', { auth: owner.token });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining')).toBe(left);
    }
    expectEnvelope(await instance.api.get('/projects', { auth: owner.token }), 429, 'RATE_LIMIT_EXCEEDED');
    // Project B's key (2 calls used above) is unaffected.
    expect((await instance.api.get('/contacts', { auth: pb.secretKey })).status).toBe(200);
  });

  it('anonymous calls (signup, login) are metered per client address', async () => {
    // 3 of the address's 5 went on signup, verify and login in beforeAll.
    for (const left of ['1', '0']) {
      const res = await instance.api.post('/auth/login', { email: owner.email, password: owner.password });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-ratelimit-remaining')).toBe(left);
    }
    const refused = await instance.api.post('/auth/signup', { email: 'one-too-many@example.com', password: 'long enough' });
    expectEnvelope(refused, 429, 'RATE_LIMIT_EXCEEDED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
