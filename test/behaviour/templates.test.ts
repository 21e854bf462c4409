// Templates through the HTTP API: creation rules, the verified-sender rule, partial updates,
// deletion, paging, search and type filtering, and isolation between projects.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import type { ApiClient } from '../harness/client.ts';
import { uniqueDomain, verifiedDomain } from '../harness/domains.ts';
import { startInstance, type Instance } from '../harness/instance.ts';

interface Template {
  id: string;
  name: string;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  description: string | null;
  type: 'TRANSACTIONAL' | 'MARKETING';
  createdAt: string;
  updatedAt: string;
}
interface TemplatePage {
  templates: Template[];
  total: number;
  page: number;
  pageSize: number;
  totalPages: number;
}

let instance: Instance;
let a: ProjectAccess;
let b: ProjectAccess;
/** Verified sending domains of a (two) and b (one). */
let domainA: string;
let domainA2: string;
let domainB: string;
/** Added to project a but never verified. */
let unverifiedA: string;

beforeAll(async () => {
  instance = await startInstance();
  a = await newProject(instance, 'A');
  b = await newProject(instance, 'B');
  domainA = (await verifiedDomain(instance, a)).domain;
  domainA2 = (await verifiedDomain(instance, a)).domain;
  domainB = (await verifiedDomain(instance, b)).domain;
  unverifiedA = uniqueDomain('unverified');
  const added = await instance.api.post('/domains', { projectId: a.projectId, domain: unverifiedA }, { auth: a.token });
  expect(added.status, JSON.stringify(added.body)).toBe(201);
  expect(added.body.data.verified).toBe(false);
});
afterAll(() => instance.dispose());

let seq = 0;
const valid = (over: Record<string, unknown> = {}) => ({
  name: `Welcome ${++seq}`,
  subject: 'Hello {{ firstName ?? there }}',
  body: '<p>Hi {{firstName}}, <a href="{{unsubscribeUrl}}">unsubscribe</a></p>',
  from: `hello@${domainA}`,
  ...over,
});

async function create(api: ApiClient, body: Record<string, unknown>): Promise<Template> {
  const res = await api.post('/templates', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data;
}
const get = async (api: ApiClient, id: string): Promise<Template> => {
  const res = await api.get(`/templates/${id}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
};
const list = async (api: ApiClient, query = ''): Promise<TemplatePage> => {
  const res = await api.get(`/templates${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
};
/** Every template of the project (they are few in the shared projects). */
const all = async (api: ApiClient): Promise<Template[]> => (await list(api, '?pageSize=100')).templates;
/** A short test-title form of a value. */
const shown = (v: unknown) => {
  const json = JSON.stringify(v);
  return json.length > 40 ? `${json.slice(0, 12)}… (${typeof v === 'string' ? v.length : json.length} chars)` : json;
};
const fieldsOf = (body: { error?: { errors?: { field: string }[] } }) => (body.error?.errors ?? []).map((e) => e.field);

describe('POST /templates', () => {
  it('creates a template: 201, every field, nulls for absent optionals, TRANSACTIONAL by default', async () => {
    const input = valid();
    const res = await a.api.post('/templates', input);
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    const t: Template = res.body.data;
    expect(Object.keys(t).sort()).toEqual(
      ['body', 'createdAt', 'description', 'from', 'fromName', 'id', 'name', 'replyTo', 'subject', 'type', 'updatedAt'].sort(),
    );
    expect(t).toMatchObject({ ...input, fromName: null, replyTo: null, description: null, type: 'TRANSACTIONAL' });
    expect(typeof t.id).toBe('string');
    expect(new Date(t.createdAt).toISOString()).toBe(t.createdAt);
    expect(t.updatedAt).toBe(t.createdAt);
    expect(await get(a.api, t.id)).toEqual(t);
  });

  it('stores every optional field as given', async () => {
    const input = valid({
      fromName: 'Acme Support',
      replyTo: 'help@elsewhere.example.org',
      description: 'Sent after signup',
      type: 'MARKETING',
    });
    const t = await create(a.api, input);
    expect(t).toMatchObject(input);
    expect(await get(a.api, t.id)).toEqual(t);
  });

  it('null optionals are the same as absent ones', async () => {
    const t = await create(a.api, valid({ fromName: null, replyTo: null, description: null }));
    expect(t).toMatchObject({ fromName: null, replyTo: null, description: null });
  });

  it('keeps the template text byte for byte (tags, markup, entities, non-ASCII)', async () => {
    const body = '<html><body style="color:#333">\n  <p>Grüße {{ name ?? "Freund" }} &amp; {{{x}}} {{ broken }</p>\n</body></html>';
    const t = await create(a.api, valid({ body, subject: 'Résumé for {{name}} — {{ company ?? ACME Inc }}' }));
    expect((await get(a.api, t.id)).body).toBe(body);
    expect(t.subject).toBe('Résumé for {{name}} — {{ company ?? ACME Inc }}');
  });

  it('trims name and subject, lower-cases the domain of from and replyTo but keeps their local part', async () => {
    const t = await create(
      a.api,
      valid({ name: '  Padded  ', subject: '  Hi  ', from: ` News.Letter@${domainA.toUpperCase()} `, replyTo: 'Reply.To@Example.ORG' }),
    );
    expect(t).toMatchObject({ name: 'Padded', subject: 'Hi', from: `News.Letter@${domainA}`, replyTo: 'Reply.To@example.org' });
  });

  it('each required field missing is a 422 naming it, and nothing is created', async () => {
    const before = (await list(a.api)).total;
    for (const field of ['name', 'subject', 'body', 'from']) {
      const input: Record<string, unknown> = valid();
      delete input[field];
      const res = await a.api.post('/templates', input);
      expect(res.status, field).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(fieldsOf(res.body), field).toEqual([field]);
    }
    const empty = await a.api.post('/templates', {});
    expect(empty.status).toBe(422);
    expect(fieldsOf(empty.body).sort()).toEqual(['body', 'from', 'name', 'subject']);
    expect((await list(a.api)).total).toBe(before);
  });

  it.each(([
    ['name', ''],
    ['name', '   '],
    ['name', 'x'.repeat(201)],
    ['name', 42],
    ['subject', ''],
    ['subject', 'x'.repeat(999)],
    ['subject', 'Hello\r\nBcc: victim@example.com'],
    ['subject', 'Line\nbreak'],
    ['subject', null],
    ['body', ''],
    ['body', '  \n '],
    ['body', { html: '<p>' }],
    ['from', 'not-an-email'],
    ['from', ''],
    ['from', { email: 'x@example.com' }],
    ['fromName', ''],
    ['fromName', 'x'.repeat(201)],
    ['fromName', 'Acme\r\nBcc: x@example.com'],
    ['replyTo', 'nope'],
    ['description', 'x'.repeat(1001)],
    ['description', 7],
    ['type', 'NEWSLETTER'],
    ['type', 'transactional'],
    ['type', null],
    ['unknownField', 'x'],
  ] as [string, unknown][]).map(([field, value]) => [field, shown(value), value] as const))(
    '%s = %s is a 422 naming the field, and nothing is created',
    async (field, _shown, value) => {
      const before = (await list(a.api)).total;
      const res = await a.api.post('/templates', valid({ [field]: value }));
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(fieldsOf(res.body)).toEqual([field]);
      expect((await list(a.api)).total).toBe(before);
    },
  );

  it('accepts every field at its limit', async () => {
    const t = await create(
      a.api,
      valid({ name: 'n'.repeat(200), subject: 's'.repeat(998), fromName: 'f'.repeat(200), description: 'd'.repeat(1000) }),
    );
    expect(t.name).toHaveLength(200);
    expect(t.subject).toHaveLength(998);
    expect(t.fromName).toHaveLength(200);
    expect(t.description).toHaveLength(1000);
  });

  it('body is limited to 512 KB of UTF-8: exactly 512 KB is fine, one byte more is a 422', async () => {
    const limit = 512 * 1024;
    const ok = await create(a.api, valid({ body: 'x'.repeat(limit) }));
    expect((await get(a.api, ok.id)).body).toHaveLength(limit);
    // Counted in bytes: 2-byte characters reach the limit at half the length.
    const twoByte = await create(a.api, valid({ body: 'é'.repeat(limit / 2) }));
    expect(twoByte.body).toHaveLength(limit / 2);

    const before = (await list(a.api)).total;
    for (const body of ['x'.repeat(limit + 1), `${'é'.repeat(limit / 2)}x`]) {
      const res = await a.api.post('/templates', valid({ body }));
      expect(res.status).toBe(422);
      expect(fieldsOf(res.body)).toEqual(['body']);
      expect(res.body.error.errors[0].code).toBe('too_big');
    }
    expect((await list(a.api)).total).toBe(before);
  });

  it('a request body far over the limit is a 413', async () => {
    const res = await a.api.post('/templates', valid({ body: 'x'.repeat(3 * 1024 * 1024) }));
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('a public key is refused with 403 FORBIDDEN, no key with 401', async () => {
    const pub = await instance.api.post('/templates', valid(), { auth: a.publicKey });
    expect(pub.status).toBe(403);
    expect(pub.body.error.code).toBe('FORBIDDEN');
    expect((await instance.api.post('/templates', valid())).status).toBe(401);
    expect((await instance.api.get('/templates')).status).toBe(401);
  });
});

describe('the sender must be on a verified domain of the project', () => {
  const refused = async (from: string) => {
    const before = (await list(a.api)).total;
    const res = await a.api.post('/templates', valid({ from }));
    expect(res.status, `${from}: ${JSON.stringify(res.body)}`).toBe(403);
    expect(res.body.error.code).toBe('DOMAIN_NOT_VERIFIED');
    expect((await list(a.api)).total).toBe(before);
  };

  it('a domain added to the project but not verified: 403 DOMAIN_NOT_VERIFIED, nothing created', async () => {
    await refused(`hello@${unverifiedA}`);
  });

  it('a domain never added: 403', async () => {
    await refused(`hello@${uniqueDomain('never')}`);
  });

  it("another project's verified domain: 403", async () => {
    await refused(`hello@${domainB}`);
  });

  it('any address on a verified domain works, whatever its case', async () => {
    const t = await create(a.api, valid({ from: `Anyone@${domainA2.toUpperCase()}` }));
    expect(t.from).toBe(`Anyone@${domainA2}`);
  });

  it('the reply-to address needs no verified domain', async () => {
    const t = await create(a.api, valid({ replyTo: `someone@${uniqueDomain('reply')}` }));
    expect(t.replyTo).toMatch(/^someone@reply-/);
  });

  it('invalid fields are reported (422) before the domain is checked', async () => {
    const res = await a.api.post('/templates', valid({ from: `hello@${unverifiedA}`, name: '' }));
    expect(res.status).toBe(422);
    expect(fieldsOf(res.body)).toEqual(['name']);
  });
});

describe('GET, PATCH and DELETE /templates/:id', () => {
  it('PATCH changes only the given fields and moves updatedAt', async () => {
    const t = await create(a.api, valid({ fromName: 'Acme', replyTo: 'r@example.org', description: 'desc' }));
    await new Promise((r) => setTimeout(r, 5));
    const res = await a.api.patch(`/templates/${t.id}`, { name: 'Renamed' });
    expect(res.status).toBe(200);
    const patched: Template = res.body.data;
    expect(patched).toEqual({ ...t, name: 'Renamed', updatedAt: patched.updatedAt });
    expect(patched.updatedAt > t.updatedAt).toBe(true);
    expect(await get(a.api, t.id)).toEqual(patched);

    const again = await a.api.patch(`/templates/${t.id}`, { subject: 'New {{x}}', body: '<b>new</b>', type: 'MARKETING' });
    expect(again.status).toBe(200);
    expect(await get(a.api, t.id)).toEqual({
      ...patched,
      subject: 'New {{x}}',
      body: '<b>new</b>',
      type: 'MARKETING',
      updatedAt: again.body.data.updatedAt,
    });
  });

  it('PATCH with null clears fromName, replyTo and description', async () => {
    const t = await create(a.api, valid({ fromName: 'Acme', replyTo: 'r@example.org', description: 'desc' }));
    const res = await a.api.patch(`/templates/${t.id}`, { fromName: null, replyTo: null });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ fromName: null, replyTo: null, description: 'desc' });
    const cleared = await a.api.patch(`/templates/${t.id}`, { description: null });
    expect((await get(a.api, t.id)).description).toBeNull();
    expect(cleared.body.data.fromName).toBeNull();
  });

  it('PATCH to another verified domain of the project works', async () => {
    const t = await create(a.api, valid());
    const res = await a.api.patch(`/templates/${t.id}`, { from: `moved@${domainA2}` });
    expect(res.status).toBe(200);
    expect((await get(a.api, t.id)).from).toBe(`moved@${domainA2}`);
  });

  it('PATCH of from to an unverified domain is a 403 and changes nothing, not even the other fields', async () => {
    const t = await create(a.api, valid());
    for (const from of [`x@${unverifiedA}`, `x@${domainB}`, `x@${uniqueDomain('never')}`]) {
      const res = await a.api.patch(`/templates/${t.id}`, { from, name: 'Should not stick' });
      expect(res.status, from).toBe(403);
      expect(res.body.error.code).toBe('DOMAIN_NOT_VERIFIED');
    }
    expect(await get(a.api, t.id)).toEqual(t);
  });

  it('PATCH with an empty body is a 422', async () => {
    const t = await create(a.api, valid());
    const res = await a.api.patch(`/templates/${t.id}`, {});
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(fieldsOf(res.body)).toEqual(['body']);
    expect(await get(a.api, t.id)).toEqual(t);
  });

  it.each(([
    ['name', ''],
    ['name', null],
    ['subject', 'a\nb'],
    ['subject', null],
    ['body', ''],
    ['body', null],
    ['from', 'nope'],
    ['from', null],
    ['replyTo', 'nope'],
    ['type', 'OTHER'],
    ['type', null],
    ['description', 'x'.repeat(1001)],
    ['id', 'x'],
    ['createdAt', '2024-01-01T00:00:00.000Z'],
  ] as [string, unknown][]).map(([field, value]) => [field, shown(value), value] as const))(
    'PATCH %s = %s is a 422 naming the field and changes nothing',
    async (field, _shown, value) => {
      const t = await create(a.api, valid());
      // A valid change next to the bad one: nothing of the request is applied.
      const other = field === 'description' ? { name: 'changed?' } : { description: 'changed?' };
      const res = await a.api.patch(`/templates/${t.id}`, { ...other, [field]: value });
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      expect(fieldsOf(res.body)).toContain(field);
      expect(await get(a.api, t.id)).toEqual(t);
    },
  );

  it('DELETE answers 204 with no body; the template is gone from GET, PATCH, DELETE and the list', async () => {
    const doomed = await create(a.api, valid());
    const keeper = await create(a.api, valid());
    const res = await a.api.delete(`/templates/${doomed.id}`);
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();
    expect((await a.api.get(`/templates/${doomed.id}`)).status).toBe(404);
    expect((await a.api.patch(`/templates/${doomed.id}`, { name: 'x' })).status).toBe(404);
    expect((await a.api.delete(`/templates/${doomed.id}`)).status).toBe(404);
    const ids = (await all(a.api)).map((t) => t.id);
    expect(ids).not.toContain(doomed.id);
    expect(ids).toContain(keeper.id);
    expect(await get(a.api, keeper.id)).toEqual(keeper);
  });

  it('an unknown id is a 404 NOT_FOUND on GET, PATCH and DELETE', async () => {
    const id = '01900000-0000-7000-8000-000000000000';
    for (const res of [
      await a.api.get(`/templates/${id}`),
      await a.api.patch(`/templates/${id}`, { name: 'x' }),
      await a.api.delete(`/templates/${id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });

  it("another project's template is a 404 on GET, PATCH and DELETE, and stays unchanged", async () => {
    const t = await create(a.api, valid());
    expect((await b.api.get(`/templates/${t.id}`)).status).toBe(404);
    // Even with a from that is verified for the caller's project.
    const patched = await b.api.patch(`/templates/${t.id}`, { name: 'stolen', from: `x@${domainB}` });
    expect(patched.status).toBe(404);
    expect(patched.body.error.code).toBe('NOT_FOUND');
    expect((await b.api.delete(`/templates/${t.id}`)).status).toBe(404);
    expect(await get(a.api, t.id)).toEqual(t);
    expect((await all(b.api)).map((x) => x.id)).not.toContain(t.id);
  });
});

describe('GET /templates', () => {
  let lp: ProjectAccess;
  /** In creation order. */
  const made: Template[] = [];

  beforeAll(async () => {
    lp = await newProject(instance, 'Listing');
    const domain = (await verifiedDomain(instance, lp)).domain;
    const names = Array.from({ length: 25 }, (_, i) =>
      i === 3 ? 'Order Receipt' : i === 11 ? 'receipt (refund)' : i === 20 ? 'Password reset' : `Template ${String(i).padStart(2, '0')}`,
    );
    for (const [i, name] of names.entries()) {
      made.push(await create(lp.api, { name, subject: 's', body: 'b', from: `x@${domain}`, type: i % 3 === 0 ? 'MARKETING' : 'TRANSACTIONAL' }));
    }
  });

  const idsOf = (page: TemplatePage) => page.templates.map((t) => t.id);
  const newestFirst = (ts: Template[]) => ts.slice().reverse().map((t) => t.id);

  it('is newest first, 20 per page by default, with total and totalPages', async () => {
    const page = await list(lp.api);
    expect(page).toMatchObject({ total: 25, page: 1, pageSize: 20, totalPages: 2 });
    expect(idsOf(page)).toEqual(newestFirst(made).slice(0, 20));
    expect(page.templates[0]).toEqual(made[24]);
    const second = await list(lp.api, '?page=2');
    expect(second).toMatchObject({ total: 25, page: 2, pageSize: 20, totalPages: 2 });
    expect(idsOf(second)).toEqual(newestFirst(made).slice(20));
  });

  it('pages walk every template exactly once; a page past the end is empty', async () => {
    const seen: string[] = [];
    for (let page = 1; page <= 4; page++) {
      const res = await list(lp.api, `?page=${page}&pageSize=7`);
      expect(res).toMatchObject({ total: 25, page, pageSize: 7, totalPages: 4 });
      expect(res.templates).toHaveLength(page < 4 ? 7 : 4);
      seen.push(...idsOf(res));
    }
    expect(seen).toEqual(newestFirst(made));
    const past = await list(lp.api, '?page=5&pageSize=7');
    expect(past).toMatchObject({ templates: [], total: 25, page: 5, pageSize: 7, totalPages: 4 });
  });

  it('pageSize is 1-100 and page at least 1; anything else is a 422 naming the parameter', async () => {
    expect((await list(lp.api, '?pageSize=100')).templates).toHaveLength(25);
    expect((await list(lp.api, '?pageSize=1')).totalPages).toBe(25);
    for (const [query, field] of [
      ['?pageSize=101', 'pageSize'],
      ['?pageSize=0', 'pageSize'],
      ['?pageSize=abc', 'pageSize'],
      ['?pageSize=2.5', 'pageSize'],
      ['?page=0', 'page'],
      ['?page=-1', 'page'],
      ['?page=x', 'page'],
      ['?type=NEWSLETTER', 'type'],
      ['?type=marketing', 'type'],
    ]) {
      const res = await lp.api.get(`/templates${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(fieldsOf(res.body), query).toEqual([field]);
    }
  });

  it('type filters exactly, and total counts the filtered templates', async () => {
    const marketing = made.filter((_, i) => i % 3 === 0);
    const transactional = made.filter((_, i) => i % 3 !== 0);
    const m = await list(lp.api, '?type=MARKETING');
    expect(m).toMatchObject({ total: marketing.length, totalPages: 1 });
    expect(idsOf(m)).toEqual(newestFirst(marketing));
    const t = await list(lp.api, '?type=TRANSACTIONAL&pageSize=100');
    expect(idsOf(t)).toEqual(newestFirst(transactional));
    expect(t.templates.every((x) => x.type === 'TRANSACTIONAL')).toBe(true);
  });

  it('search is a partial, case-insensitive, literal match on the name', async () => {
    const receipts = await list(lp.api, '?search=RECEIPT');
    expect(receipts.templates.map((t) => t.name)).toEqual(['receipt (refund)', 'Order Receipt']);
    expect(receipts).toMatchObject({ total: 2, totalPages: 1 });
    expect((await list(lp.api, '?search=word%20res')).templates.map((t) => t.name)).toEqual(['Password reset']);
    // Literal, not a pattern: "(" and "." are plain characters.
    expect((await list(lp.api, '?search=(refund)')).templates.map((t) => t.name)).toEqual(['receipt (refund)']);
    expect((await list(lp.api, '?search=Templat.')).total).toBe(0);
    expect((await list(lp.api, '?search=nothing-like-this')).total).toBe(0);
    const templates = await list(lp.api, '?search=template&pageSize=5&page=2');
    expect(templates).toMatchObject({ total: 22, page: 2, pageSize: 5, totalPages: 5 });
    expect(templates.templates.every((t) => t.name.startsWith('Template'))).toBe(true);
  });

  it('search and type combine', async () => {
    // Index 3 ("Order Receipt") is MARKETING; index 11 ("receipt (refund)") is TRANSACTIONAL.
    expect((await list(lp.api, '?search=receipt&type=MARKETING')).templates.map((t) => t.id)).toEqual([made[3].id]);
    expect((await list(lp.api, '?search=receipt&type=TRANSACTIONAL')).templates.map((t) => t.id)).toEqual([made[11].id]);
  });

  it("lists only the project's own templates; an empty project has zero pages", async () => {
    const ids = new Set((await all(a.api)).map((t) => t.id));
    expect(made.some((t) => ids.has(t.id))).toBe(false);
    const empty = await newProject(instance, 'Empty');
    expect(await list(empty.api)).toEqual({ templates: [], total: 0, page: 1, pageSize: 20, totalPages: 0 });
  });
});

describe('POST /templates/:id/test', () => {
  it("sends the saved template now, marked as a test, rendered with the contact's data", async () => {
    const t = await create(a.api, valid({ subject: 'Hello {{ firstName ?? there }}', body: '<p>Hi {{ firstName ?? friend }}</p>' }));
    expect((await a.api.post('/contacts', { email: 'tess@example.com', data: { firstName: 'Tess' } })).status).toBe(201);
    const res = await a.api.post(`/templates/${t.id}/test`, { email: 'Tess@Example.com' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ to: 'tess@example.com' });
    const mail = await instance.smtp.waitForMailTo('tess@example.com');
    expect(mail.parsed.subject).toBe('[TEST] Hello Tess');
    expect(mail.parsed.html).toContain('Hi Tess');
    expect(mail.parsed.headers.find((h) => h.key === 'x-mailroom-test')?.value).toBe('true');
  });

  it('another address gets the fallbacks and does not become a contact', async () => {
    const t = await create(a.api, valid({ subject: 'Hello {{ firstName ?? there }}' }));
    const res = await a.api.post(`/templates/${t.id}/test`, { email: 'outsider@example.com' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const mail = await instance.smtp.waitForMailTo('outsider@example.com');
    expect(mail.parsed.subject).toBe('[TEST] Hello there');
    expect((await a.api.get('/contacts?search=outsider@example.com')).body.data.contacts).toEqual([]);
  });

  it('a bad address is a 422 on email; an unknown or another project\'s template is a 404', async () => {
    const t = await create(a.api, valid());
    const bad = await a.api.post(`/templates/${t.id}/test`, { email: 'not an address' });
    expect(bad.status).toBe(422);
    expect(fieldsOf(bad.body)).toEqual(['email']);
    expect((await a.api.post('/templates/nope/test', { email: 'x@example.com' })).status).toBe(404);
    expect((await b.api.post(`/templates/${t.id}/test`, { email: 'x@example.com' })).status).toBe(404);
  });
});
