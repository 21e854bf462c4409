// Contacts through the HTTP API: the Contact resource rules, subscription events, listing and isolation.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { type ApiClient, type ApiResponse, type EventRecord } from '../harness/client.ts';
import { startInstance, type Instance } from '../harness/instance.ts';

interface Contact {
  id: string;
  email: string;
  subscribed: boolean;
  data: Record<string, string | number | boolean>;
  createdAt: string;
  updatedAt: string;
}

let instance: Instance;
let a: ProjectAccess;
let b: ProjectAccess;

beforeAll(async () => {
  instance = await startInstance();
  a = await newProject(instance, 'A');
  b = await newProject(instance, 'B');
});
afterAll(() => instance.dispose());

let seq = 0;
const unique = (name: string) => `${name}-${++seq}-${Date.now()}@example.com`;

async function create(api: ApiClient, body: Record<string, unknown>): Promise<Contact> {
  const res = await api.post('/contacts', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  const { _meta, ...contact } = res.body.data;
  return contact;
}
const get = async (api: ApiClient, id: string): Promise<Contact> => {
  const res = await api.get(`/contacts/${id}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
};
const eventsOf = async (api: ApiClient, id: string): Promise<EventRecord[]> => {
  const res = await api.get(`/events/contact/${id}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data;
};
/** Every contact of the project with this exact email (search is a partial match). */
const withEmail = async (api: ApiClient, email: string): Promise<Contact[]> => {
  const res = await api.get(`/contacts?limit=100&search=${encodeURIComponent(email)}`);
  expect(res.status).toBe(200);
  return (res.body.data.contacts as Contact[]).filter((c) => c.email === email);
};
const fieldsOf = (body: { error?: { errors?: { field: string }[] } }) => (body.error?.errors ?? []).map((e) => e.field);

describe('creating and upserting a contact', () => {
  it('creates a new contact with 201, _meta {isNew:true,isUpdate:false} and subscribed true by default', async () => {
    const email = unique('new');
    const res = await a.api.post('/contacts', { email, data: { plan: 'free' } });
    expect(res.status).toBe(201);
    expect(res.body.success).toBe(true);
    const c = res.body.data;
    expect(c).toMatchObject({ email, subscribed: true, data: { plan: 'free' }, _meta: { isNew: true, isUpdate: false } });
    expect(typeof c.id).toBe('string');
    expect(new Date(c.createdAt).toISOString()).toBe(c.createdAt);
    expect(new Date(c.updatedAt).toISOString()).toBe(c.updatedAt);
    // _meta belongs to the create/upsert response only.
    const fetched = await get(a.api, c.id);
    expect(fetched).not.toHaveProperty('_meta');
    expect(fetched).toEqual({ id: c.id, email, subscribed: true, data: { plan: 'free' }, createdAt: c.createdAt, updatedAt: c.updatedAt });
  });

  it('a second POST with the same email updates that contact: 200, isUpdate, data merged, no duplicate', async () => {
    const email = unique('upsert');
    const first = await create(a.api, { email, data: { plan: 'free', seats: 1 } });
    const res = await a.api.post('/contacts', { email, data: { seats: 2, city: 'Oslo' } });
    expect(res.status).toBe(200);
    expect(res.body.data._meta).toEqual({ isNew: false, isUpdate: true });
    expect(res.body.data.id).toBe(first.id);
    expect(res.body.data.data).toEqual({ plan: 'free', seats: 2, city: 'Oslo' });
    expect(res.body.data.createdAt).toBe(first.createdAt);
    expect((await get(a.api, first.id)).data).toEqual({ plan: 'free', seats: 2, city: 'Oslo' });
    expect(await withEmail(a.api, email)).toHaveLength(1);
  });

  it('an upsert that omits subscribed keeps the existing state, one that gives it changes it', async () => {
    const email = unique('keep');
    const c = await create(a.api, { email, subscribed: false });
    expect(c.subscribed).toBe(false);
    const kept = await a.api.post('/contacts', { email, data: { x: 1 } });
    expect(kept.status).toBe(200);
    expect(kept.body.data.subscribed).toBe(false);
    expect((await get(a.api, c.id)).subscribed).toBe(false);
    const changed = await a.api.post('/contacts', { email, subscribed: true });
    expect(changed.body.data.subscribed).toBe(true);
    expect((await get(a.api, c.id)).subscribed).toBe(true);
  });

  it('emails are trimmed and lower-cased, so differently-cased addresses are one contact', async () => {
    const local = `Mixed.Case-${++seq}-${Date.now()}`;
    const res = await a.api.post('/contacts', { email: `  ${local}@Example.COM ` });
    expect(res.status).toBe(201);
    const email = `${local.toLowerCase()}@example.com`;
    expect(res.body.data.email).toBe(email);
    const again = await a.api.post('/contacts', { email: `${local.toUpperCase()}@EXAMPLE.com` });
    expect(again.status).toBe(200);
    expect(again.body.data.id).toBe(res.body.data.id);
    const tracked = await a.api.post('/v1/track', { email: `${local}@example.com`, event: 'visited' });
    expect(tracked.status).toBe(200);
    expect(tracked.body.data.contact).toBe(res.body.data.id);
    expect(await withEmail(a.api, email)).toHaveLength(1);
  });

  it('an invalid email is a 422 and creates nothing', async () => {
    const res = await a.api.post('/contacts', { email: 'not-an-email' });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(fieldsOf(res.body)).toContain('email');
  });
});

describe('contact data', () => {
  it.each(['email', 'createdAt', 'updatedAt', 'subscribed'])('"%s" is managed by the service: 422 in data, nothing stored', async (key) => {
    const email = unique(`managed-${key}`);
    const res = await a.api.post('/contacts', { email, data: { [key]: 'x', ok: 1 } });
    expect(res.status).toBe(422);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(fieldsOf(res.body)).toContain(`data.${key}`);
    expect(await withEmail(a.api, email)).toHaveLength(0);

    const c = await create(a.api, { email, data: { ok: 1 } });
    const patched = await a.api.patch(`/contacts/${c.id}`, { data: { [key]: 'x' } });
    expect(patched.status).toBe(422);
    expect(await get(a.api, c.id)).toEqual(c);
  });

  it('locale must be an ISO 639-1 code and is stored lower-case', async () => {
    const email = unique('locale');
    for (const locale of ['english', 'f', 'f1', 42]) {
      const bad = await a.api.post('/contacts', { email, data: { locale } });
      expect(bad.status, `locale ${JSON.stringify(locale)}`).toBe(422);
      expect(fieldsOf(bad.body)).toContain('data.locale');
    }
    expect(await withEmail(a.api, email)).toHaveLength(0);
    const c = await create(a.api, { email, data: { locale: 'FR' } });
    expect(c.data.locale).toBe('fr');
    expect((await get(a.api, c.id)).data.locale).toBe('fr');
    const patched = await a.api.patch(`/contacts/${c.id}`, { data: { locale: 'DE' } });
    expect(patched.status).toBe(200);
    expect((await get(a.api, c.id)).data.locale).toBe('de');
  });

  it('typed values come back with their JSON types', async () => {
    const data = {
      count: 42,
      zero: 0,
      ratio: 1.5,
      negative: -7,
      vip: true,
      churned: false,
      signedUpAt: '2024-05-01T10:00:00.000Z',
      name: 'Ann',
      digits: '42',
      flag: 'true',
      blank: '',
    };
    const c = await create(a.api, { email: unique('typed'), data });
    expect(c.data).toStrictEqual(data);
    expect((await get(a.api, c.id)).data).toStrictEqual(data);
  });

  it.each([
    ['an object', { nested: { a: 1 } }],
    ['an array', { tags: ['a', 'b'] }],
    ['a non-persistent wrapper', { plan: { value: 'pro', persistent: false } }],
  ])('%s as a data value is a 422 and stores nothing', async (_what, data) => {
    const email = unique('nested');
    const res = await a.api.post('/contacts', { email, data });
    expect(res.status).toBe(422);
    expect(await withEmail(a.api, email)).toHaveLength(0);
    const c = await create(a.api, { email, data: { keep: 'me' } });
    expect((await a.api.patch(`/contacts/${c.id}`, { data })).status).toBe(422);
    expect((await get(a.api, c.id)).data).toEqual({ keep: 'me' });
  });

  it('a null value removes the key and leaves the others', async () => {
    const email = unique('null');
    const c = await create(a.api, { email, data: { a: 1, b: 'two', c: true } });
    const patched = await a.api.patch(`/contacts/${c.id}`, { data: { a: null } });
    expect(patched.status).toBe(200);
    expect(patched.body.data.data).toEqual({ b: 'two', c: true });
    const upserted = await a.api.post('/contacts', { email, data: { b: null, d: 4 } });
    expect(upserted.status).toBe(200);
    expect((await get(a.api, c.id)).data).toEqual({ c: true, d: 4 });
  });
});

describe('GET, PATCH and DELETE /contacts/:id', () => {
  it('PATCH changes the email (lower-cased), subscription and data and answers the updated contact', async () => {
    const c = await create(a.api, { email: unique('patch'), data: { a: 1 } });
    const newEmail = unique('Patched').toUpperCase();
    const res = await a.api.patch(`/contacts/${c.id}`, { email: newEmail, subscribed: false, data: { b: 2 } });
    expect(res.status).toBe(200);
    const expected = { id: c.id, email: newEmail.toLowerCase(), subscribed: false, data: { a: 1, b: 2 }, createdAt: c.createdAt };
    expect(res.body.data).toMatchObject(expected);
    expect(await get(a.api, c.id)).toMatchObject(expected);
    // The contact is now found under its new email and no longer under the old one.
    expect(await withEmail(a.api, newEmail.toLowerCase())).toHaveLength(1);
    expect(await withEmail(a.api, c.email)).toHaveLength(0);
    // The old email is free again: posting it makes a new contact.
    const reused = await a.api.post('/contacts', { email: c.email });
    expect(reused.status).toBe(201);
    expect(reused.body.data.id).not.toBe(c.id);
  });

  it("PATCH to another contact's email is a 409 and changes nothing on either contact", async () => {
    const taken = await create(a.api, { email: unique('taken'), data: { owner: true } });
    const mover = await create(a.api, { email: unique('mover'), data: { a: 1 } });
    const res = await a.api.patch(`/contacts/${mover.id}`, {
      email: taken.email.toUpperCase(),
      subscribed: false,
      data: { a: 2, b: 3 },
    });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('CONFLICT');
    expect(await get(a.api, mover.id)).toEqual(mover);
    expect(await get(a.api, taken.id)).toEqual(taken);
    expect(await eventsOf(a.api, mover.id)).toEqual([]);
    // The failed turn left the actor consistent: the next patch builds on the unchanged contact.
    const next = await a.api.patch(`/contacts/${mover.id}`, { data: { c: 4 } });
    expect(next.status).toBe(200);
    expect(next.body.data).toMatchObject({ email: mover.email, subscribed: true, data: { a: 1, c: 4 } });
  });

  it('an unknown id is a 404 on GET, PATCH and DELETE', async () => {
    const id = '01900000-0000-7000-8000-000000000000';
    for (const res of [await a.api.get(`/contacts/${id}`), await a.api.patch(`/contacts/${id}`, { data: { a: 1 } }), await a.api.delete(`/contacts/${id}`)]) {
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });

  it("another project's contact id is a 404 on GET, PATCH and DELETE and nothing changes", async () => {
    const c = await create(a.api, { email: unique('isolated'), data: { a: 1 } });
    expect((await b.api.get(`/contacts/${c.id}`)).status).toBe(404);
    expect((await b.api.patch(`/contacts/${c.id}`, { subscribed: false, data: { a: 2 } })).status).toBe(404);
    expect((await b.api.delete(`/contacts/${c.id}`)).status).toBe(404);
    expect((await b.api.get(`/events/contact/${c.id}`)).status).toBe(404);
    expect(await get(a.api, c.id)).toEqual(c);
    expect(await eventsOf(a.api, c.id)).toEqual([]);
    // Nor does project B see it in its list.
    expect(await withEmail(b.api, c.email)).toHaveLength(0);
  });

  it('DELETE answers 204 and removes the contact and all its events, and only those', async () => {
    const doomed = await create(a.api, { email: unique('doomed') });
    const keeper = await create(a.api, { email: unique('keeper') });
    for (const email of [doomed.email, keeper.email]) {
      expect((await a.api.post('/v1/track', { email, event: 'purchase' })).status).toBe(200);
    }
    expect((await a.api.patch(`/contacts/${doomed.id}`, { subscribed: false })).status).toBe(200);
    expect((await eventsOf(a.api, doomed.id)).map((e) => e.name).sort()).toEqual(['contact.unsubscribed', 'purchase']);

    const res = await a.api.delete(`/contacts/${doomed.id}`);
    expect(res.status).toBe(204);
    expect(res.body).toBeUndefined();

    expect((await a.api.get(`/contacts/${doomed.id}`)).status).toBe(404);
    expect((await a.api.get(`/events/contact/${doomed.id}`)).status).toBe(404);
    const all = (await a.api.get('/events?limit=100')).body.data as EventRecord[];
    expect(all.filter((e) => e.contactId === doomed.id)).toEqual([]);
    expect(all.filter((e) => e.contactId === keeper.id).map((e) => e.name)).toEqual(['purchase']);
    expect(await withEmail(a.api, doomed.email)).toHaveLength(0);
    expect((await a.api.delete(`/contacts/${doomed.id}`)).status).toBe(404);

    // The email is free: posting it makes a brand-new contact with no history.
    const reborn = await a.api.post('/contacts', { email: doomed.email });
    expect(reborn.status).toBe(201);
    expect(reborn.body.data.id).not.toBe(doomed.id);
    expect(reborn.body.data.subscribed).toBe(true);
    expect(await eventsOf(a.api, reborn.body.data.id)).toEqual([]);
  });
});

describe('subscription events', () => {
  it('PATCH subscribed false records contact.unsubscribed, back to true contact.subscribed; no change records nothing', async () => {
    const c = await create(a.api, { email: unique('subs') });
    // Creating a contact records no subscription event.
    expect(await eventsOf(a.api, c.id)).toEqual([]);

    expect((await a.api.patch(`/contacts/${c.id}`, { subscribed: false })).body.data.subscribed).toBe(false);
    let events = await eventsOf(a.api, c.id);
    expect(events.map((e) => e.name)).toEqual(['contact.unsubscribed']);
    expect(events[0]).toMatchObject({ contactId: c.id, system: true });

    // Same value again, or a data-only change: no new event.
    expect((await a.api.patch(`/contacts/${c.id}`, { subscribed: false })).status).toBe(200);
    expect((await a.api.patch(`/contacts/${c.id}`, { data: { a: 1 } })).status).toBe(200);
    expect((await a.api.post('/contacts', { email: c.email, data: { a: 2 } })).status).toBe(200);
    expect(await eventsOf(a.api, c.id)).toHaveLength(1);

    expect((await a.api.patch(`/contacts/${c.id}`, { subscribed: true })).body.data.subscribed).toBe(true);
    events = await eventsOf(a.api, c.id);
    expect(events.map((e) => e.name)).toEqual(['contact.subscribed', 'contact.unsubscribed']);
    expect(events[0]).toMatchObject({ contactId: c.id, system: true });
    expect((await get(a.api, c.id)).subscribed).toBe(true);
  });

  it('an upsert that changes subscribed records the event too', async () => {
    const c = await create(a.api, { email: unique('upsert-subs') });
    expect((await a.api.post('/contacts', { email: c.email, subscribed: false })).status).toBe(200);
    expect((await eventsOf(a.api, c.id)).map((e) => e.name)).toEqual(['contact.unsubscribed']);
  });
});

describe('listing contacts', () => {
  let list: ProjectAccess;
  /** In creation order. */
  const made: Contact[] = [];

  beforeAll(async () => {
    list = await newProject(instance, 'List');
    for (let i = 0; i < 25; i++) {
      const local = i === 3 ? 'Alice.Smith' : i === 17 ? 'bob.smithers' : i === 9 ? 'xzy' : `person${String(i).padStart(2, '0')}`;
      made.push(await create(list.api, { email: `${local}@Example.com` }));
    }
  });

  it('is newest first with 20 per page by default, total on the first page', async () => {
    const res = await list.api.get('/contacts');
    expect(res.status).toBe(200);
    const page = res.body.data;
    expect(page.contacts.map((c: Contact) => c.id)).toEqual(made.slice(5).reverse().map((c) => c.id));
    expect(page.hasMore).toBe(true);
    expect(page.total).toBe(25);
    expect(typeof page.cursor).toBe('string');
  });

  it('cursor paging walks every contact exactly once, in order, with hasMore false and cursor null at the end', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    for (;;) {
      const res: ApiResponse = await list.api.get(`/contacts?limit=7${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      const page: { contacts: Contact[]; cursor: string | null; hasMore: boolean; total?: number } = res.body.data;
      if (pages === 0) expect(page.total).toBe(25);
      else expect(page).not.toHaveProperty('total');
      pages++;
      seen.push(...page.contacts.map((c) => c.id));
      if (!page.hasMore) {
        expect(page.cursor).toBeNull();
        break;
      }
      expect(page.contacts).toHaveLength(7);
      cursor = page.cursor;
      expect(pages).toBeLessThan(10);
    }
    expect(pages).toBe(4);
    expect(seen).toEqual(made.slice().reverse().map((c) => c.id));
  });

  it('a page that ends exactly at the last contact says hasMore false', async () => {
    const res = await list.api.get('/contacts?limit=25');
    expect(res.body.data.contacts).toHaveLength(25);
    expect(res.body.data.hasMore).toBe(false);
    expect(res.body.data.cursor).toBeNull();
  });

  it('limit is 1-100: 100 is fine, 101 and 0 are a 422', async () => {
    expect((await list.api.get('/contacts?limit=100')).body.data.contacts).toHaveLength(25);
    for (const limit of ['101', '0', 'abc']) {
      const res = await list.api.get(`/contacts?limit=${limit}`);
      expect(res.status, `limit=${limit}`).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
  });

  it('search is a partial, case-insensitive match on email, and total counts the matches', async () => {
    const res = await list.api.get('/contacts?search=SMITH');
    expect(res.status).toBe(200);
    expect(res.body.data.contacts.map((c: Contact) => c.email)).toEqual(['bob.smithers@example.com', 'alice.smith@example.com']);
    expect(res.body.data.total).toBe(2);
    expect(res.body.data.hasMore).toBe(false);
    expect((await list.api.get('/contacts?search=ice.Sm')).body.data.contacts.map((c: Contact) => c.email)).toEqual([
      'alice.smith@example.com',
    ]);
    // The search text is literal, not a pattern: "x.y" does not match "xzy".
    expect((await list.api.get('/contacts?search=x.y')).body.data.total).toBe(0);
    expect((await list.api.get('/contacts?search=(')).status).toBe(200);
  });

  it('search pages with the cursor too', async () => {
    const first = await list.api.get('/contacts?search=person&limit=10');
    expect(first.body.data.total).toBe(22);
    const second = await list.api.get(`/contacts?search=person&limit=10&cursor=${first.body.data.cursor}`);
    const third = await list.api.get(`/contacts?search=person&limit=10&cursor=${second.body.data.cursor}`);
    const emails = [first, second, third].flatMap((r) => r.body.data.contacts.map((c: Contact) => c.email));
    expect(emails).toHaveLength(22);
    expect(new Set(emails).size).toBe(22);
    expect(emails.every((e) => e.startsWith('person'))).toBe(true);
    expect(third.body.data.hasMore).toBe(false);
  });

  it('subscribed=true|false keeps only (un)subscribed contacts, with search and the cursor, and total counts them', async () => {
    const out = [made[2], made[3], made[20]];
    for (const c of out) expect((await list.api.patch(`/contacts/${c.id}`, { subscribed: false })).status).toBe(200);
    const unsubscribed = await list.api.get('/contacts?subscribed=false');
    expect(unsubscribed.body.data.contacts.map((c: Contact) => c.id)).toEqual(out.map((c) => c.id).reverse());
    expect(unsubscribed.body.data.total).toBe(3);
    const subscribed = await list.api.get('/contacts?subscribed=true&limit=100');
    expect(subscribed.body.data.total).toBe(22);
    expect(subscribed.body.data.contacts.every((c: Contact) => c.subscribed)).toBe(true);
    expect((await list.api.get('/contacts?subscribed=false&search=smith')).body.data.contacts.map((c: Contact) => c.email)).toEqual([
      'alice.smith@example.com',
    ]);
    const page = await list.api.get('/contacts?subscribed=false&limit=2');
    const next = await list.api.get(`/contacts?subscribed=false&limit=2&cursor=${page.body.data.cursor}`);
    expect(next.body.data.contacts.map((c: Contact) => c.id)).toEqual([out[0].id]);
    const bad = await list.api.get('/contacts?subscribed=yes');
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors[0].field).toBe('subscribed');
    for (const c of out) await list.api.patch(`/contacts/${c.id}`, { subscribed: true });
  });

  it("lists only the project's own contacts", async () => {
    const res = await a.api.get('/contacts?limit=100');
    const ids = new Set(res.body.data.contacts.map((c: Contact) => c.id));
    expect(made.some((c) => ids.has(c.id))).toBe(false);
  });
});

describe('concurrency', () => {
  it('20 parallel tracks of the same new email make exactly one contact with all 20 events', async () => {
    const email = unique('race-track');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => a.api.post('/v1/track', { email, event: 'race', data: { n: i } })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    const ids = new Set(results.map((r) => r.body.data.contact));
    expect(ids.size).toBe(1);
    const [id] = ids;
    expect(await withEmail(a.api, email)).toHaveLength(1);
    const contact = await get(a.api, id);
    expect(contact.subscribed).toBe(true);
    expect(contact.data.n).toBeTypeOf('number');
    expect((await eventsOf(a.api, id)).filter((e) => e.name === 'race')).toHaveLength(20);
  });

  it('20 parallel POST /contacts of the same new email make exactly one contact: one 201, nineteen 200', async () => {
    const email = unique('race-post');
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => a.api.post('/contacts', { email, data: { [`k${i}`]: i } })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(19);
    expect(results.filter((r) => r.body.data._meta.isNew)).toHaveLength(1);
    expect(new Set(results.map((r) => r.body.data.id)).size).toBe(1);
    const found = await withEmail(a.api, email);
    expect(found).toHaveLength(1);
    // Every request's data was merged into the one contact.
    expect(Object.keys(found[0].data).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`).sort());
  });
});

describe('GET /contacts/:id/segments', () => {
  it('lists the segments the contact is in now, dynamic by their condition and static by membership, by name', async () => {
    const project = await newProject(instance, 'Segments of a contact');
    const pro = await create(project.api, { email: unique('pro'), data: { plan: 'pro' } });
    const free = await create(project.api, { email: unique('free'), data: { plan: 'free' } });
    const condition = { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] };
    const paying = await project.api.post('/segments', { name: 'Paying', condition });
    expect(paying.status, JSON.stringify(paying.body)).toBe(201);
    const vip = await project.api.post('/segments', { name: 'A VIP list', type: 'STATIC' });
    expect(vip.status, JSON.stringify(vip.body)).toBe(201);
    expect((await project.api.post(`/segments/${vip.body.data.id}/members`, { emails: [pro.email] })).status).toBe(200);

    const of = async (id: string) => {
      const res = await project.api.get(`/contacts/${id}/segments`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.data;
    };
    expect(await of(pro.id)).toEqual([
      { id: vip.body.data.id, name: 'A VIP list', slug: 'a-vip-list', type: 'STATIC' },
      { id: paying.body.data.id, name: 'Paying', slug: 'paying', type: 'DYNAMIC' },
    ]);
    expect(await of(free.id)).toEqual([]);
    // Leaving the condition leaves the segment at once.
    await project.api.patch(`/contacts/${pro.id}`, { data: { plan: 'free' } });
    expect((await of(pro.id)).map((s: { name: string }) => s.name)).toEqual(['A VIP list']);
    expect((await project.api.get(`/contacts/${pro.id}/segments`, { auth: b.secretKey })).status).toBe(404);
  });
});
