import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { type ApiClient, type EventRecord, eventually, sleep } from '../harness/client.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';

// The events endpoints as a dashboard sees them: listings, names, stats, one contact's history,
// deleting a custom event name; always within the project of the key.

let unique = 0;
const email = (tag: string) => `${tag}-${++unique}-${Date.now()}@example.com`;

async function track(api: ApiClient, address: string, event: string, extra: Record<string, unknown> = {}) {
  const res = await api.post('/v1/track', { email: address, event, ...extra });
  expect(res.status).toBe(200);
  return res.body.data as { contact: string; event: string };
}

async function list(api: ApiClient, query = ''): Promise<EventRecord[]> {
  const res = await api.get(`/events${query}`);
  expect(res.status).toBe(200);
  return res.body.data;
}

async function names(api: ApiClient): Promise<string[]> {
  const res = await api.get('/events/names');
  expect(res.status).toBe(200);
  return res.body.data;
}

async function stats(api: ApiClient, query = '') {
  const res = await api.get(`/events/stats${query}`);
  expect(res.status).toBe(200);
  type Counts = { total: number; events: { name: string; count: number }[] };
  const data = res.body.data as Counts & { start: string | null; end: string | null; buckets?: (Counts & { start: string; end: string })[] };
  return { ...data, byName: Object.fromEntries(data.events.map((e) => [e.name, e.count])) };
}

const q = (params: Record<string, string | number>) =>
  `?${Object.entries(params)
    .map(([k, v]) => `${k}=${encodeURIComponent(String(v))}`)
    .join('&')}`;

/** The same instant written with a +02:00 offset. */
function withOffset(iso: string): string {
  const shifted = new Date(Date.parse(iso) + 2 * 3_600_000).toISOString();
  return `${shifted.slice(0, -1)}+02:00`;
}

function expectValidationError(res: { status: number; body: any }, field: string) {
  expect(res.status).toBe(422);
  expect(res.body.error.code).toBe('VALIDATION_ERROR');
  expect((res.body.error.errors as { field: string }[]).map((e) => e.field)).toContain(field);
}

describe('events endpoints', () => {
  let instance: Instance;
  let main: ProjectAccess;
  let other: ProjectAccess;
  /** Events of the other project, tracked before anything else: they must never show up in `main`. */
  const foreign: { contact: string; event: string; name: string }[] = [];

  beforeAll(async () => {
    instance = await startInstance();
    [main, other] = await Promise.all([newProject(instance, 'Events main'), newProject(instance, 'Events other')]);
    for (const name of ['page-view', 'order placed', 'foreign-only', 'foreign-only']) {
      foreign.push({ ...(await track(other.api, 'shared@example.com', name)), name });
    }
  });
  afterAll(() => instance?.dispose());

  describe('GET /events', () => {
    let project: ProjectAccess;
    const tracked: { id: string; name: string; contact: string }[] = [];

    beforeAll(async () => {
      project = await newProject(instance, 'Events list');
      const ann = email('ann');
      const bob = email('bob');
      for (const [who, name] of [
        [ann, 'page-view'],
        [bob, 'signup'],
        [ann, 'page-view'],
        [bob, 'purchase'],
        [ann, 'order placed'],
      ] as const) {
        const res = await track(project.api, who, name, { data: { step: tracked.length } });
        tracked.push({ id: res.event, name, contact: res.contact });
      }
    });

    it('lists the project’s events newest first, as {id, name, contactId, data, system, createdAt}', async () => {
      const events = await list(project.api);
      expect(events.map((e) => e.id)).toEqual(tracked.map((t) => t.id).reverse());
      expect(Object.keys(events[0]).sort()).toEqual(['contactId', 'createdAt', 'data', 'id', 'name', 'system']);
      const last = tracked[tracked.length - 1];
      expect(events[0]).toMatchObject({ id: last.id, name: last.name, contactId: last.contact, data: { step: 4 }, system: false });
      const times = events.map((e) => Date.parse(e.createdAt));
      expect(times.every((t, i) => i === 0 || t <= times[i - 1])).toBe(true);
    });

    it('filters by exact name', async () => {
      const pageViews = await list(project.api, q({ name: 'page-view' }));
      expect(pageViews.map((e) => e.id)).toEqual(
        tracked
          .filter((t) => t.name === 'page-view')
          .map((t) => t.id)
          .reverse(),
      );
      expect((await list(project.api, q({ name: 'order placed' }))).map((e) => e.id)).toEqual([tracked[4].id]);
      expect(await list(project.api, q({ name: 'page' }))).toEqual([]);
      expect(await list(project.api, q({ name: 'Page-View' }))).toEqual([]);
    });

    it('returns at most `limit` events, the newest ones', async () => {
      expect((await list(project.api, q({ limit: 2 }))).map((e) => e.id)).toEqual([tracked[4].id, tracked[3].id]);
      expect((await list(project.api, q({ name: 'page-view', limit: 1 }))).map((e) => e.id)).toEqual([tracked[2].id]);
    });

    it('returns 50 by default and at most 100', async () => {
      const bulk = await newProject(instance, 'Events bulk');
      const ids = (
        await Promise.all(Array.from({ length: 110 }, (_, i) => track(bulk.api, `bulk-${i % 7}@example.com`, `bulk-${i % 3}`)))
      ).map((r) => r.event);

      const byDefault = await list(bulk.api);
      const max = await list(bulk.api, q({ limit: 100 }));
      expect(byDefault).toHaveLength(50);
      expect(max).toHaveLength(100);
      expect(byDefault).toEqual(max.slice(0, 50));
      expect(new Set(max.map((e) => e.id)).size).toBe(100);
      for (const e of max) expect(ids).toContain(e.id);
      // Newest first (by time, ties by id): the ten left out are the oldest ones.
      const contacts = [...new Set(max.map((e) => e.contactId))];
      const all = (await Promise.all(contacts.map(async (id) => (await bulk.api.get(`/events/contact/${id}?limit=100`)).body.data as EventRecord[]))).flat();
      expect(all).toHaveLength(110);
      const newestFirst = (a: EventRecord, b: EventRecord) => b.createdAt.localeCompare(a.createdAt) || (b.id < a.id ? -1 : b.id > a.id ? 1 : 0);
      expect(max.map((e) => e.id)).toEqual(all.sort(newestFirst).slice(0, 100).map((e) => e.id));
    });

    it('orders by the event’s time, not by its id: a membership event’s id is older than its time', async () => {
      const ordered = await newProject(instance, 'Events order');
      // A segment entry event's id starts with the segment's id, made before the events below.
      const segment = await ordered.api.post('/segments', {
        name: 'Pro',
        trackMembership: true,
        condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }] }] },
      });
      expect(segment.status, JSON.stringify(segment.body)).toBe(201);
      const who = email('order');
      const first = await track(ordered.api, who, 'first');
      await sleep(5);
      expect((await ordered.api.patch(`/contacts/${first.contact}`, { data: { plan: 'pro' } })).status).toBe(200);
      const entry = await eventually(async () => (await list(ordered.api)).find((e) => e.name === 'segment.pro.entry'), byMode({ embedded: 10_000, distributed: 30_000 }), 'the entry event');
      expect(entry.id < first.event).toBe(true); // by id it would come after `first`
      for (const events of [await list(ordered.api), (await ordered.api.get(`/events/contact/${first.contact}`)).body.data as EventRecord[]]) {
        expect(events.map((e) => e.name)).toEqual(['segment.pro.entry', 'first']);
      }
    });

    it.each(['101', '0', '-1', '2.5', 'ten', ''])('refuses limit=%s with a 422', async (limit) => {
      expectValidationError(await project.api.get(`/events?limit=${limit}`), 'limit');
    });

    it('never lists another project’s events', async () => {
      // The other project tracked `page-view` and `order placed` too.
      const all = await list(project.api, q({ limit: 100 }));
      expect(all.map((e) => e.id).sort()).toEqual(tracked.map((t) => t.id).sort());
      for (const f of foreign) expect(all.map((e) => e.id)).not.toContain(f.event);
      expect(await list(project.api, q({ name: 'foreign-only' }))).toEqual([]);
      for (const name of ['page-view', 'order placed']) {
        const own = await list(project.api, q({ name }));
        expect(own.map((e) => e.id).sort()).toEqual(tracked.filter((t) => t.name === name).map((t) => t.id).sort());
      }
      expect((await list(other.api, q({ name: 'page-view' }))).map((e) => e.id)).toEqual([foreign[0].event]);
    });
  });

  describe('GET /events/names', () => {
    it('lists distinct names by occurrence count, most frequent first (ties by name), system events included', async () => {
      const project = await newProject(instance, 'Events names');
      const ann = email('names');
      const bob = email('names');
      // Recorded in an order that is neither count order nor name order.
      for (const [who, name] of [
        [ann, 'a-once'],
        [bob, 'd-twice'],
        [ann, 'c-thrice'],
        [ann, 'b-twice'],
        [bob, 'c-thrice'],
        [ann, 'd-twice'],
        [bob, 'b-twice'],
        [bob, 'c-thrice'],
      ] as const) {
        await track(project.api, who, name);
      }
      await track(project.api, ann, 'e-once', { subscribed: false }); // also records contact.unsubscribed

      expect(await names(project.api)).toEqual(['c-thrice', 'b-twice', 'd-twice', 'a-once', 'contact.unsubscribed', 'e-once']);
    });

    it('never lists another project’s names', async () => {
      const listed = await names(main.api);
      expect(listed).not.toContain('foreign-only');
      expect(await names(other.api)).toEqual(['foreign-only', 'order placed', 'page-view']);
    });
  });

  describe('GET /events/stats', () => {
    let project: ProjectAccess;
    let t0: string;
    let t1: string;
    let t2: string;
    let t3: string;

    beforeAll(async () => {
      project = await newProject(instance, 'Events stats');
      const who = email('stats');
      t0 = new Date().toISOString();
      await sleep(5);
      await track(project.api, who, 'alpha');
      await track(project.api, who, 'beta');
      await track(project.api, who, 'alpha');
      await sleep(5);
      t1 = new Date().toISOString();
      await sleep(30);
      t2 = new Date().toISOString();
      await sleep(5);
      await track(project.api, who, 'gamma');
      await track(project.api, who, 'alpha');
      await track(project.api, who, 'gamma');
      await sleep(5);
      t3 = new Date().toISOString();
    });

    it('counts every event of the project by name when no range is given', async () => {
      const s = await stats(project.api);
      expect(s.start).toBeNull();
      expect(s.end).toBeNull();
      expect(s.total).toBe(6);
      expect(s.byName).toEqual({ alpha: 3, beta: 1, gamma: 2 });
      expect(s.events).toHaveLength(3);
    });

    it('counts only the events between start and end', async () => {
      const first = await stats(project.api, q({ start: t0, end: t1 }));
      expect(first).toMatchObject({ start: t0, end: t1, total: 3 });
      expect(first.byName).toEqual({ alpha: 2, beta: 1 });

      const second = await stats(project.api, q({ start: t2, end: t3 }));
      expect(second.total).toBe(3);
      expect(second.byName).toEqual({ alpha: 1, gamma: 2 });

      const everything = await stats(project.api, q({ start: t0, end: t3 }));
      expect(everything.total).toBe(6);

      const between = await stats(project.api, q({ start: t1, end: t2 }));
      expect(between.total).toBe(0);
      expect(between.events).toEqual([]);
    });

    it('takes an open-ended range from start only or end only', async () => {
      const fromT2 = await stats(project.api, q({ start: t2 }));
      expect(fromT2).toMatchObject({ start: t2, end: null, total: 3 });
      expect(fromT2.byName).toEqual({ alpha: 1, gamma: 2 });

      const untilT1 = await stats(project.api, q({ end: t1 }));
      expect(untilT1).toMatchObject({ start: null, end: t1, total: 3 });
      expect(untilT1.byName).toEqual({ alpha: 2, beta: 1 });

      const future = await stats(project.api, q({ start: new Date(Date.now() + 60_000).toISOString() }));
      expect(future.total).toBe(0);
    });

    it('includes events exactly at start and at end', async () => {
      const events = await list(project.api, q({ name: 'beta' }));
      const at = events[0].createdAt;
      const sameInstant = (await list(project.api)).filter((e) => e.createdAt === at);
      const s = await stats(project.api, q({ start: at, end: at }));
      expect(s.total).toBe(sameInstant.length);
      expect(s.byName.beta).toBe(1);
    });

    it('reads timestamps with an offset as the instant they name', async () => {
      const s = await stats(project.api, q({ start: withOffset(t2), end: withOffset(t3) }));
      expect(s.start).toBe(t2);
      expect(s.end).toBe(t3);
      expect(s.byName).toEqual({ alpha: 1, gamma: 2 });
    });

    it.each([
      ['start', 'yesterday'],
      ['start', '2024-13-45T00:00:00Z'],
      ['end', 'not-a-date'],
      ['end', '1700000000000'],
    ])('refuses %s=%s with a 422', async (field, value) => {
      expectValidationError(await project.api.get(`/events/stats${q({ [field]: value })}`), field);
    });

    it('refuses a start after the end with a 422', async () => {
      const res = await project.api.get(`/events/stats${q({ start: t3, end: t0 })}`);
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    });

    it('with an interval, counts each period from start on, the last one cut at end, and sums them as the range', async () => {
      const dayBeforeT2 = new Date(Date.parse(t2) - 86_400_000).toISOString();
      const s = await stats(project.api, q({ start: dayBeforeT2, end: t3, interval: 'day' }));
      expect(s.buckets).toEqual([
        {
          start: dayBeforeT2,
          end: new Date(Date.parse(t2) - 1).toISOString(),
          total: 3,
          events: [{ name: 'alpha', count: 2 }, { name: 'beta', count: 1 }],
        },
        { start: t2, end: t3, total: 3, events: [{ name: 'gamma', count: 2 }, { name: 'alpha', count: 1 }] },
      ]);
      const whole = await stats(project.api, q({ start: dayBeforeT2, end: t3 }));
      expect({ start: s.start, end: s.end, total: s.total, events: s.events }).toEqual(
        { start: whole.start, end: whole.end, total: whole.total, events: whole.events },
      );

      const hourly = await stats(project.api, q({ start: t0, end: t3, interval: 'hour' }));
      expect(hourly.buckets).toEqual([{ start: t0, end: t3, total: 6, events: hourly.events }]);
    });

    it('answers as the spec shows without an interval: no buckets', async () => {
      expect(await stats(project.api, q({ start: t0, end: t3 }))).not.toHaveProperty('buckets');
    });

    it.each([
      ['interval', { start: 'T0', end: 'T3', interval: 'month' }],
      ['start', { end: 'T3', interval: 'day' }],
      ['end', { start: 'T0', interval: 'day' }],
      ['interval', { start: 'YEAR_AGO', end: 'T3', interval: 'day' }],
    ])('refuses an interval it cannot answer with a 422 on %s (%j)', async (field, params) => {
      const at: Record<string, string> = { T0: t0, T3: t3, YEAR_AGO: new Date(Date.parse(t3) - 366 * 86_400_000).toISOString() };
      const query = Object.fromEntries(Object.entries(params).map(([k, v]) => [k, at[v] ?? v]));
      expectValidationError(await project.api.get(`/events/stats${q(query)}`), field);
    });

    it('never counts another project’s events', async () => {
      const s = await stats(other.api);
      expect(s.total).toBe(foreign.length);
      expect(s.byName).toEqual({ 'page-view': 1, 'order placed': 1, 'foreign-only': 2 });
      expect((await stats(main.api)).byName['foreign-only']).toBeUndefined();
    });
  });

  describe('GET /events/contact/:contactId', () => {
    it('lists that contact’s events newest first, system events included, and no one else’s', async () => {
      const ann = email('ann');
      const bob = email('bob');
      const a1 = await track(main.api, ann, 'viewed', { data: { page: '/pricing' } });
      await track(main.api, bob, 'viewed');
      const a2 = await track(main.api, ann, 'left', { subscribed: false });
      await track(main.api, bob, 'viewed');
      const a3 = await track(main.api, ann, 'came-back');

      const events = (await main.api.get(`/events/contact/${a1.contact}`)).body.data as EventRecord[];
      expect(events.every((e) => e.contactId === a1.contact)).toBe(true);
      // `left` and the contact.unsubscribed it caused are one moment: either order is newest first.
      expect(events).toHaveLength(4);
      expect(events[0]).toMatchObject({ id: a3.event, name: 'came-back' });
      expect([events[1].name, events[2].name].sort()).toEqual(['contact.unsubscribed', 'left']);
      expect(events.find((e) => e.name === 'left')?.id).toBe(a2.event);
      expect(events.find((e) => e.name === 'contact.unsubscribed')?.system).toBe(true);
      expect(events[3]).toMatchObject({ id: a1.event, name: 'viewed', data: { page: '/pricing' }, system: false });

      const limited = await main.api.get(`/events/contact/${a1.contact}?limit=2`);
      expect(limited.status).toBe(200);
      expect(limited.body.data.map((e: EventRecord) => e.id)).toEqual(events.slice(0, 2).map((e) => e.id));
    });

    it('`name` keeps only that contact’s events of that exact name, paged like the rest', async () => {
      const ann = email('ann-named');
      const first = await track(main.api, ann, 'viewed');
      await track(main.api, ann, 'viewed-twice');
      const second = await track(main.api, ann, 'viewed');
      await track(main.api, email('bob-named'), 'viewed');

      const named = await main.api.get(`/events/contact/${first.contact}?name=viewed`);
      expect(named.status).toBe(200);
      expect(named.body.data.map((e: EventRecord) => e.id)).toEqual([second.event, first.event]);
      const page = await main.api.get(`/events/contact/${first.contact}?name=viewed&limit=1`);
      expect(page.body.data.map((e: EventRecord) => e.id)).toEqual([second.event]);
      const rest = await main.api.get(`/events/contact/${first.contact}?name=viewed&limit=1&cursor=${page.body.nextCursor}`);
      expect(rest.body.data.map((e: EventRecord) => e.id)).toEqual([first.event]);
      expect(rest.body.hasMore).toBe(false);
      expect((await main.api.get(`/events/contact/${first.contact}?name=never`)).body.data).toEqual([]);
    });

    it('refuses a limit outside 1-100 with a 422', async () => {
      const { contact } = await track(main.api, email('limits'), 'viewed');
      expectValidationError(await main.api.get(`/events/contact/${contact}?limit=101`), 'limit');
      expectValidationError(await main.api.get(`/events/contact/${contact}?limit=0`), 'limit');
    });

    it('answers 404 for an unknown contact and for another project’s contact', async () => {
      const unknown = await main.api.get('/events/contact/01890000-0000-7000-8000-000000000000');
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('NOT_FOUND');

      const theirs = await main.api.get(`/events/contact/${foreign[0].contact}`);
      expect(theirs.status).toBe(404);
      expect(theirs.body.error.code).toBe('NOT_FOUND');
      expect(JSON.stringify(theirs.body)).not.toContain(foreign[0].event);

      // The owner sees them.
      const own = await other.api.get(`/events/contact/${foreign[0].contact}`);
      expect(own.body.data.map((e: EventRecord) => e.id).sort()).toEqual(foreign.map((f) => f.event).sort());
    });
  });

  describe('paging with `cursor`', () => {
    let project: ProjectAccess;
    let contactId: string;
    /** The ids of the events the contact's calls recorded (the tracked ones; the subscription changes come on top). */
    const trackedIds: string[] = [];

    type Page = { events: EventRecord[]; nextCursor: string | null; hasMore: boolean };
    async function page(path: string, params: Record<string, string | number>): Promise<Page> {
      const res = await project.api.get(`${path}${q(params)}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return { events: res.body.data, nextCursor: res.body.nextCursor, hasMore: res.body.hasMore };
    }
    /** Follows `nextCursor` until `hasMore` is false. */
    async function readAll(path: string, params: Record<string, string | number>): Promise<EventRecord[]> {
      const all: EventRecord[] = [];
      let cursor: string | null = null;
      for (let pages = 0; ; pages++) {
        expect(pages).toBeLessThan(100);
        const current: Page = await page(path, cursor === null ? params : { ...params, cursor });
        expect(current.events.length).toBeLessThanOrEqual(Number(params.limit));
        all.push(...current.events);
        if (!current.hasMore) {
          expect(current.nextCursor).toBeNull();
          return all;
        }
        expect(typeof current.nextCursor).toBe('string');
        cursor = current.nextCursor;
      }
    }
    const newestFirst = (a: EventRecord, b: EventRecord) => b.createdAt.localeCompare(a.createdAt) || (b.id < a.id ? -1 : b.id > a.id ? 1 : 0);

    beforeAll(async () => {
      project = await newProject(instance, 'Events paging');
      const who = email('history');
      // Each call after the first flips the subscription: its event and the contact.subscribed or
      // contact.unsubscribed it causes are recorded in one turn, at the same instant (a tie of time).
      for (let i = 0; i < 60; i++) {
        const res = await track(project.api, who, i % 2 ? 'opened-app' : 'visited', { subscribed: i % 2 === 1 });
        contactId = res.contact;
        trackedIds.push(res.event);
      }
    });

    it('reads a contact’s whole history past 100 events page by page: each event once, none missing, newest first, ties of time included', async () => {
      const everything = await readAll(`/events/contact/${contactId}`, { limit: 7 }); // odd: pages end inside ties
      expect(everything.length).toBe(119); // 60 tracked, 59 subscription changes
      expect(new Set(everything.map((e) => e.id)).size).toBe(everything.length);
      expect(everything.map((e) => e.id)).toEqual([...everything].sort(newestFirst).map((e) => e.id));
      for (const id of trackedIds) expect(everything.map((e) => e.id)).toContain(id);
      const instants = everything.map((e) => e.createdAt);
      expect(new Set(instants).size).toBeLessThan(instants.length); // the ties are really there
      // Larger pages give the same sequence.
      expect((await readAll(`/events/contact/${contactId}`, { limit: 100 })).map((e) => e.id)).toEqual(everything.map((e) => e.id));
    });

    it('pages GET /events the same way, with and without a name filter', async () => {
      const everything = await readAll('/events', { limit: 9 });
      expect(everything.map((e) => e.id)).toEqual((await readAll(`/events/contact/${contactId}`, { limit: 100 })).map((e) => e.id));
      const visits = await readAll('/events', { name: 'visited', limit: 4 });
      expect(visits.map((e) => e.id)).toEqual(everything.filter((e) => e.name === 'visited').map((e) => e.id));
      expect(visits).toHaveLength(30);
    });

    it('keeps `data` the array of events and puts `nextCursor` and `hasMore` beside it; the last page says so', async () => {
      const first = await project.api.get('/events?limit=100');
      expect(Array.isArray(first.body.data)).toBe(true);
      expect(first.body).toMatchObject({ success: true, hasMore: true });
      expect(typeof first.body.nextCursor).toBe('string');
      const last = await project.api.get(`/events${q({ limit: 100, cursor: first.body.nextCursor })}`);
      expect(last.body).toMatchObject({ success: true, hasMore: false, nextCursor: null });
      expect(last.body.data).toHaveLength(19);
    });

    it('continues where the page ended when newer events arrive in between', async () => {
      const first = await page(`/events/contact/${contactId}`, { limit: 10 });
      const next = await page(`/events/contact/${contactId}`, { limit: 10, cursor: first.nextCursor! });
      await track(project.api, (await project.api.get(`/contacts/${contactId}`)).body.data.email, 'later');
      const again = await page(`/events/contact/${contactId}`, { limit: 10, cursor: first.nextCursor! });
      expect(again.events.map((e) => e.id)).toEqual(next.events.map((e) => e.id));
    });

    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    it.each([
      ['not base64url', 'no spaces!'],
      ['not JSON', Buffer.from('hello').toString('base64url')],
      ['an object', b64({ createdAt: '2026-01-01T00:00:00.000Z', id: 'x' })],
      ['a bad time', b64(['yesterday', 'x'])],
      ['an empty id', b64(['2026-01-01T00:00:00.000Z', ''])],
      ['a number id', b64(['2026-01-01T00:00:00.000Z', 5])],
      ['a query operator', b64([{ $gt: '' }, 'x'])],
      ['too long', 'a'.repeat(1001)],
    ])('refuses a cursor that is %s with a 422 on `cursor`, on both lists', async (_, cursor) => {
      expectValidationError(await project.api.get(`/events${q({ cursor })}`), 'cursor');
      expectValidationError(await project.api.get(`/events/contact/${contactId}${q({ cursor })}`), 'cursor');
      expectValidationError(await project.api.get(`/events/contact/01890000-0000-7000-8000-000000000000${q({ cursor })}`), 'cursor');
    });
  });

  describe('DELETE /events/:eventName', () => {
    let project: ProjectAccess;
    let ann: { contact: string };
    let bob: { contact: string };

    beforeAll(async () => {
      project = await newProject(instance, 'Events delete');
      const annEmail = email('del-ann');
      const bobEmail = email('del-bob');
      ann = await track(project.api, annEmail, 'order placed');
      bob = await track(project.api, bobEmail, 'order placed');
      await track(project.api, annEmail, 'order placed');
      await track(project.api, annEmail, 'checkout.started');
      await track(project.api, bobEmail, 'checkout.started');
      await track(project.api, bobEmail, 'keep-me');
      await track(project.api, annEmail, 'opted-out', { subscribed: false }); // contact.unsubscribed
      await track(project.api, annEmail, 'opted-in', { subscribed: true }); // contact.subscribed
    });

    it('deletes every record of a custom name (URL-encoded, with a space) and answers {name, deleted}', async () => {
      const before = await stats(project.api);
      expect(before.byName['order placed']).toBe(3);

      const res = await project.api.delete(`/events/${encodeURIComponent('order placed')}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ success: true, data: { name: 'order placed', deleted: 3 } });

      expect(await list(project.api, q({ name: 'order placed' }))).toEqual([]);
      expect(await names(project.api)).not.toContain('order placed');
      const after = await stats(project.api);
      expect(after.byName['order placed']).toBeUndefined();
      expect(after.total).toBe(before.total - 3);
      for (const c of [ann, bob]) {
        const events = (await project.api.get(`/events/contact/${c.contact}`)).body.data as EventRecord[];
        expect(events.map((e) => e.name)).not.toContain('order placed');
      }
      // Everything else stays.
      expect(await names(project.api)).toEqual(
        expect.arrayContaining(['checkout.started', 'keep-me', 'opted-out', 'opted-in', 'contact.subscribed', 'contact.unsubscribed']),
      );
    });

    it('leaves other projects’ events of the same name alone', async () => {
      expect((await list(other.api, q({ name: 'order placed' }))).map((e) => e.id)).toEqual(
        foreign.filter((f) => f.name === 'order placed').map((f) => f.event),
      );
    });

    it('deletes a dotted name', async () => {
      const res = await project.api.delete('/events/checkout.started');
      expect(res.status).toBe(200);
      expect(res.body.data).toEqual({ name: 'checkout.started', deleted: 2 });
      expect(await list(project.api, q({ name: 'checkout.started' }))).toEqual([]);
      expect(await names(project.api)).not.toContain('checkout.started');
      expect((await list(project.api, q({ name: 'keep-me' })))).toHaveLength(1);
    });

    it('answers 404 for a name with no records: unknown, already deleted, or only in another project', async () => {
      for (const name of ['never-tracked', 'order placed', 'foreign-only']) {
        const res = await project.api.delete(`/events/${encodeURIComponent(name)}`);
        expect(res.status).toBe(404);
        expect(res.body.error.code).toBe('NOT_FOUND');
      }
      expect((await stats(other.api)).byName['foreign-only']).toBe(2);
    });

    it.each(['email.sent', 'email.open', 'contact.subscribed', 'Contact.Unsubscribed', 'segment.vip.entry', 'segment.vip.exit'])(
      'refuses to delete the system name %s with a 422 and deletes nothing',
      async (name) => {
        const before = await stats(project.api);
        const res = await project.api.delete(`/events/${encodeURIComponent(name)}`);
        expect(res.status).toBe(422);
        expect(res.body.error.code).toBe('VALIDATION_ERROR');
        expect(await stats(project.api)).toEqual(before);
        expect(before.byName['contact.subscribed']).toBe(1);
        expect(before.byName['contact.unsubscribed']).toBe(1);
      },
    );

    it('counts a name tracked again after its deletion from scratch', async () => {
      await track(project.api, email('again'), 'order placed');
      expect((await stats(project.api)).byName['order placed']).toBe(1);
      const res = await project.api.delete(`/events/${encodeURIComponent('order placed')}`);
      expect(res.body.data).toEqual({ name: 'order placed', deleted: 1 });
    });
  });

  describe('credentials', () => {
    const endpoints: [string, string][] = [
      ['GET', '/events'],
      ['GET', '/events/names'],
      ['GET', '/events/stats'],
      ['GET', '/events/contact/whoever'],
      ['DELETE', '/events/keep-me'],
    ];

    it.each(endpoints)('%s %s needs a key (401) and refuses the public key (403)', async (method, path) => {
      const none = await instance.api.call(method, path);
      expect(none.status).toBe(401);
      expect(none.body.error.code).toBe('UNAUTHORIZED');
      const pk = await instance.api.call(method, path, undefined, { auth: main.publicKey });
      expect(pk.status).toBe(403);
      expect(pk.body.error.code).toBe('FORBIDDEN');
    });

    it('keeps the events a refused delete named', async () => {
      const { contact } = await track(main.api, email('guarded'), 'guarded-event');
      const res = await instance.api.delete('/events/guarded-event', undefined, { auth: main.publicKey });
      expect(res.status).toBe(403);
      const events = (await main.api.get(`/events/contact/${contact}`)).body.data as EventRecord[];
      expect(events.map((e) => e.name)).toEqual(['guarded-event']);
    });
  });
});
