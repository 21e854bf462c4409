import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { type ApiClient, type EventRecord } from '../harness/client.ts';
import { startInstance, type Instance } from '../harness/instance.ts';

// POST /v1/track as a client sees it: the contact it creates or changes, the event it records,
// the names it refuses, who may call it, and Idempotency-Key.

let unique = 0;
const email = (tag: string) => `${tag}-${++unique}-${Date.now()}@example.com`;

/** The contact with exactly this email, or undefined. */
async function contactByEmail(api: ApiClient, address: string) {
  const res = await api.get(`/contacts?search=${encodeURIComponent(address)}&limit=100`);
  expect(res.status).toBe(200);
  return (res.body.data.contacts as { id: string; email: string; subscribed: boolean; data: Record<string, unknown> }[]).find(
    (c) => c.email === address.trim().toLowerCase(),
  );
}

async function contactEvents(api: ApiClient, contactId: string): Promise<EventRecord[]> {
  const res = await api.get(`/events/contact/${contactId}?limit=100`);
  expect(res.status).toBe(200);
  return res.body.data;
}

async function eventsNamed(api: ApiClient, name: string): Promise<EventRecord[]> {
  const res = await api.get(`/events?name=${encodeURIComponent(name)}&limit=100`);
  expect(res.status).toBe(200);
  return res.body.data;
}

async function totals(api: ApiClient): Promise<{ events: number; contacts: number }> {
  const [stats, list] = await Promise.all([api.get('/events/stats'), api.get('/contacts?limit=1')]);
  expect(stats.status).toBe(200);
  expect(list.status).toBe(200);
  return { events: stats.body.data.total, contacts: list.body.data.total };
}

describe('POST /v1/track', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let other: ProjectAccess;

  beforeAll(async () => {
    instance = await startInstance();
    [project, other] = await Promise.all([newProject(instance, 'Track A'), newProject(instance, 'Track B')]);
  });
  afterAll(() => instance?.dispose());

  describe('the response and the records', () => {
    it('answers {success, data:{contact, event, timestamp}} naming the contact and the event it recorded', async () => {
      const address = email('Shape');
      const before = Date.now();
      const res = await project.api.post('/v1/track', { email: `  ${address.toUpperCase()} `, event: 'signed-up' });
      const after = Date.now();

      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(Object.keys(res.body.data).sort()).toEqual(['contact', 'event', 'timestamp']);
      const { contact, event, timestamp } = res.body.data;
      expect(typeof contact).toBe('string');
      expect(typeof event).toBe('string');
      expect(new Date(timestamp).toISOString()).toBe(timestamp);
      expect(Date.parse(timestamp)).toBeGreaterThanOrEqual(before - 1000);
      expect(Date.parse(timestamp)).toBeLessThanOrEqual(after + 1000);

      // The contact id is the contact's, with the email trimmed and lower-cased.
      const got = await project.api.get(`/contacts/${contact}`);
      expect(got.status).toBe(200);
      expect(got.body.data.email).toBe(address.toLowerCase());

      // The event id is the recorded event's, for that contact.
      const recorded = await contactEvents(project.api, contact);
      expect(recorded).toHaveLength(1);
      expect(recorded[0]).toMatchObject({ id: event, name: 'signed-up', contactId: contact, system: false, data: {} });
    });

    it('creates a subscribed contact for an unknown email, recording no subscription event', async () => {
      const address = email('new');
      const { contacts: before } = await totals(project.api);
      const res = await project.api.post('/v1/track', { email: address, event: 'visited' });
      expect(res.status).toBe(200);

      const contact = await contactByEmail(project.api, address);
      expect(contact).toMatchObject({ id: res.body.data.contact, subscribed: true, data: {} });
      expect((await totals(project.api)).contacts).toBe(before + 1);
      expect((await contactEvents(project.api, contact!.id)).map((e) => e.name)).toEqual(['visited']);
    });

    it('tracks for an existing contact without creating another one', async () => {
      const address = email('again');
      const first = await project.api.post('/v1/track', { email: address, event: 'visited' });
      const { contacts: before } = await totals(project.api);
      const second = await project.api.post('/v1/track', { email: address.toUpperCase(), event: 'visited' });

      expect(second.status).toBe(200);
      expect(second.body.data.contact).toBe(first.body.data.contact);
      expect(second.body.data.event).not.toBe(first.body.data.event);
      expect((await totals(project.api)).contacts).toBe(before);
      expect(await contactEvents(project.api, first.body.data.contact)).toHaveLength(2);
    });

    it('creates an unsubscribed contact when subscribed:false is given for an unknown email', async () => {
      const address = email('optout');
      const res = await project.api.post('/v1/track', { email: address, event: 'visited', subscribed: false });
      expect(res.status).toBe(200);

      const contact = await contactByEmail(project.api, address);
      expect(contact).toMatchObject({ id: res.body.data.contact, subscribed: false });
      // Creation records no subscription event.
      expect((await contactEvents(project.api, contact!.id)).map((e) => e.name)).toEqual(['visited']);
    });

    it('keeps an existing contact subscription when subscribed is omitted', async () => {
      const out = email('keep-out');
      const inn = email('keep-in');
      await project.api.post('/v1/track', { email: out, event: 'visited', subscribed: false });
      await project.api.post('/contacts', { email: inn, subscribed: true });

      expect((await project.api.post('/v1/track', { email: out, event: 'visited' })).status).toBe(200);
      expect((await project.api.post('/v1/track', { email: inn, event: 'visited' })).status).toBe(200);

      const outContact = await contactByEmail(project.api, out);
      const inContact = await contactByEmail(project.api, inn);
      expect(outContact?.subscribed).toBe(false);
      expect(inContact?.subscribed).toBe(true);
      expect((await contactEvents(project.api, outContact!.id)).map((e) => e.name)).toEqual(['visited', 'visited']);
      expect((await contactEvents(project.api, inContact!.id)).map((e) => e.name)).toEqual(['visited']);
    });

    it('changes an existing contact subscription when subscribed is given, recording contact.unsubscribed / contact.subscribed', async () => {
      const address = email('toggle');
      const created = await project.api.post('/v1/track', { email: address, event: 'visited' });
      const id = created.body.data.contact as string;

      const off = await project.api.post('/v1/track', { email: address, event: 'opted-out', subscribed: false });
      expect(off.status).toBe(200);
      expect((await project.api.get(`/contacts/${id}`)).body.data.subscribed).toBe(false);
      let names = (await contactEvents(project.api, id)).map((e) => e.name);
      expect(names.filter((n) => n === 'contact.unsubscribed')).toHaveLength(1);
      expect(names).not.toContain('contact.subscribed');

      const on = await project.api.post('/v1/track', { email: address, event: 'opted-in', subscribed: true });
      expect(on.status).toBe(200);
      expect((await project.api.get(`/contacts/${id}`)).body.data.subscribed).toBe(true);
      const recorded = await contactEvents(project.api, id);
      const subscribedEvents = recorded.filter((e) => e.name === 'contact.subscribed');
      expect(subscribedEvents).toHaveLength(1);
      expect(subscribedEvents[0]).toMatchObject({ contactId: id, system: true });
      expect(recorded.find((e) => e.name === 'contact.unsubscribed')).toMatchObject({ contactId: id, system: true });

      // Giving the state it already has is no change: no further subscription event.
      await project.api.post('/v1/track', { email: address, event: 'visited', subscribed: true });
      names = (await contactEvents(project.api, id)).map((e) => e.name);
      expect(names.filter((n) => n === 'contact.subscribed')).toHaveLength(1);
      expect(names.filter((n) => n === 'contact.unsubscribed')).toHaveLength(1);
      expect(names.filter((n) => !n.startsWith('contact.'))).toEqual(['visited', 'opted-in', 'opted-out', 'visited']);
    });

    it('saves persistent data on the contact with its JSON type, merged into what the contact has, and in the event record', async () => {
      const address = email('data');
      const renewsAt = '2030-01-02T03:04:05.000Z';
      const data = { plan: 'pro', seats: 3, ratio: 0.25, trial: true, renewsAt, code: '007' };
      const res = await project.api.post('/v1/track', { email: address, event: 'upgraded', data });
      expect(res.status).toBe(200);

      const contact = (await project.api.get(`/contacts/${res.body.data.contact}`)).body.data;
      expect(contact.data).toStrictEqual(data);
      expect(typeof contact.data.seats).toBe('number');
      expect(typeof contact.data.trial).toBe('boolean');
      expect(contact.data.code).toBe('007');

      const [event] = await eventsNamed(project.api, 'upgraded');
      expect(event.id).toBe(res.body.data.event);
      expect(event.data).toStrictEqual(data);

      // A later call merges: given keys change, others stay, null removes one.
      const next = await project.api.post('/v1/track', {
        email: address,
        event: 'seats-changed',
        data: { seats: 5, trial: null, team: 'core' },
      });
      expect(next.status).toBe(200);
      const merged = (await project.api.get(`/contacts/${res.body.data.contact}`)).body.data;
      expect(merged.data).toStrictEqual({ plan: 'pro', seats: 5, ratio: 0.25, renewsAt, code: '007', team: 'core' });
      const [changed] = await eventsNamed(project.api, 'seats-changed');
      expect(changed.data).toStrictEqual({ seats: 5, team: 'core' });
    });

    it('saves a {value, persistent:false} value neither on the contact nor in the event record', async () => {
      const address = email('transient');
      await project.api.post('/contacts', { email: address, data: { orderId: 'kept-from-before' } });
      const res = await project.api.post('/v1/track', {
        email: address,
        event: 'order-paid',
        data: {
          orderId: { value: 'o-123', persistent: false },
          amount: { value: 42.5, persistent: false },
          gift: { value: true, persistent: false },
          plan: 'basic',
        },
      });
      expect(res.status).toBe(200);

      const contact = (await project.api.get(`/contacts/${res.body.data.contact}`)).body.data;
      expect(contact.data).toStrictEqual({ orderId: 'kept-from-before', plan: 'basic' });

      const recorded = await contactEvents(project.api, res.body.data.contact);
      expect(recorded).toHaveLength(1);
      expect(recorded[0].id).toBe(res.body.data.event);
      expect(recorded[0].data).toStrictEqual({ plan: 'basic' });
      expect(JSON.stringify(recorded)).not.toContain('o-123');
    });
  });

  describe('reserved names', () => {
    const reserved = [
      'email.sent',
      'email.open',
      'Email.Click',
      'EMAIL.BOUNCE',
      'email.anything',
      'contact.subscribed',
      'contact.unsubscribed',
      'Contact.Unsubscribed',
      'segment.vip-users.entry',
      'segment.x.exit',
      'Segment.VIP.Entry',
    ];

    it.each(reserved)('refuses %s with a 422 on field `event` and records nothing', async (name) => {
      const address = email('reserved');
      const before = await totals(project.api);
      const sameNameBefore = await eventsNamed(project.api, name);
      const res = await project.api.post('/v1/track', { email: address, event: name });

      expect(res.status).toBe(422);
      expect(res.body.success).toBe(false);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain('event');
      expect(await totals(project.api)).toEqual(before);
      expect(await contactByEmail(project.api, address)).toBeUndefined();
      expect(await eventsNamed(project.api, name)).toEqual(sameNameBefore);
    });

    it('refuses a reserved name with the public key too', async () => {
      const address = email('reserved-pk');
      const res = await instance.api.post('/v1/track', { email: address, event: 'contact.subscribed' }, { auth: project.publicKey });
      expect(res.status).toBe(422);
      expect(await contactByEmail(project.api, address)).toBeUndefined();
    });

    it.each(['segment.notes', 'contacted', 'contact.created', 'emails', 'segment.vip.entry-form', 'my.email.sent'])(
      'accepts %s, which only looks like a system name',
      async (name) => {
        const res = await project.api.post('/v1/track', { email: email('lookalike'), event: name });
        expect(res.status).toBe(200);
        const recorded = await eventsNamed(project.api, name);
        expect(recorded.map((e) => e.id)).toContain(res.body.data.event);
        expect(recorded.find((e) => e.id === res.body.data.event)?.system).toBe(false);
      },
    );
  });

  describe('validation', () => {
    const cases: [string, (address: string) => unknown, string][] = [
      ['a missing email', () => ({ event: 'x' }), 'email'],
      ['a missing event', (address) => ({ email: address }), 'event'],
      ['an invalid email', () => ({ email: 'not-an-email', event: 'x' }), 'email'],
      ['an email that is a number', () => ({ email: 42, event: 'x' }), 'email'],
      ['an event that is a number', (address) => ({ email: address, event: 7 }), 'event'],
      ['an empty event', (address) => ({ email: address, event: '   ' }), 'event'],
      ['an event over 200 characters', (address) => ({ email: address, event: 'e'.repeat(201) }), 'event'],
      ['subscribed as a string', (address) => ({ email: address, event: 'x', subscribed: 'yes' }), 'subscribed'],
      ['data as a string', (address) => ({ email: address, event: 'x', data: 'plan=pro' }), 'data'],
      ['data as an array', (address) => ({ email: address, event: 'x', data: ['pro'] }), 'data'],
      ['a nested object in data', (address) => ({ email: address, event: 'x', data: { plan: { name: 'pro' } } }), 'data.plan'],
      ['an array value in data', (address) => ({ email: address, event: 'x', data: { tags: ['a'] } }), 'data.tags'],
      [
        'a non-persistent value that is an object',
        (address) => ({ email: address, event: 'x', data: { cart: { value: { id: 1 }, persistent: false } } }),
        'data.cart',
      ],
      ['data.email (managed)', (address) => ({ email: address, event: 'x', data: { email: 'other@example.com' } }), 'data.email'],
      ['data.subscribed (managed)', (address) => ({ email: address, event: 'x', data: { subscribed: false } }), 'data.subscribed'],
      ['data.createdAt (managed)', (address) => ({ email: address, event: 'x', data: { createdAt: '2020-01-01T00:00:00Z' } }), 'data.createdAt'],
      ['data.updatedAt (managed)', (address) => ({ email: address, event: 'x', data: { updatedAt: '2020-01-01T00:00:00Z' } }), 'data.updatedAt'],
      [
        'a managed key as a non-persistent value',
        (address) => ({ email: address, event: 'x', data: { subscribed: { value: true, persistent: false } } }),
        'data.subscribed',
      ],
      ['an unknown top-level field', (address) => ({ email: address, event: 'x', name: 'Ann' }), 'name'],
    ];

    it.each(cases)('refuses %s with a 422 and creates no contact', async (_label, body, field) => {
      const address = email('invalid');
      const before = await totals(project.api);
      const res = await project.api.post('/v1/track', body(address));

      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      const fields = (res.body.error.errors as { field: string }[]).map((e) => e.field);
      expect(fields.some((f) => f === field || f.startsWith(`${field}.`))).toBe(true);
      expect(await totals(project.api)).toEqual(before);
      expect(await contactByEmail(project.api, address)).toBeUndefined();
    });

    it('refuses a body that is not JSON', async () => {
      const res = await project.api.post('/v1/track', undefined, { raw: '{"email": "a@example.com", "event":', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    });
  });

  describe('credentials', () => {
    it('accepts the public key', async () => {
      const address = email('pk');
      const res = await instance.api.post('/v1/track', { email: address, event: 'from-browser' }, { auth: project.publicKey });
      expect(res.status).toBe(200);
      const contact = await contactByEmail(project.api, address);
      expect(contact?.id).toBe(res.body.data.contact);
      expect((await eventsNamed(project.api, 'from-browser')).map((e) => e.id)).toEqual([res.body.data.event]);
    });

    it('accepts the secret key', async () => {
      const res = await instance.api.post('/v1/track', { email: email('sk'), event: 'from-server' }, { auth: project.secretKey });
      expect(res.status).toBe(200);
      expect((await eventsNamed(project.api, 'from-server')).map((e) => e.id)).toEqual([res.body.data.event]);
    });

    it('refuses a call without a key, or with an unknown one, with 401 and records nothing', async () => {
      const address = email('nokey');
      const before = await totals(project.api);
      const none = await instance.api.post('/v1/track', { email: address, event: 'anonymous' });
      expect(none.status).toBe(401);
      expect(none.body.error.code).toBe('UNAUTHORIZED');
      const bogus = await instance.api.post('/v1/track', { email: address, event: 'anonymous' }, { auth: 'pk_not-a-real-key' });
      expect(bogus.status).toBe(401);
      expect(await totals(project.api)).toEqual(before);
      expect(await contactByEmail(project.api, address)).toBeUndefined();
    });

    it('records an event in the project of the key, not in another project', async () => {
      const address = email('scoped');
      const res = await instance.api.post('/v1/track', { email: address, event: 'scoped-event' }, { auth: other.publicKey });
      expect(res.status).toBe(200);
      expect(await contactByEmail(project.api, address)).toBeUndefined();
      expect(await eventsNamed(project.api, 'scoped-event')).toEqual([]);
      expect((await eventsNamed(other.api, 'scoped-event')).map((e) => e.id)).toEqual([res.body.data.event]);
      expect((await project.api.get(`/contacts/${res.body.data.contact}`)).status).toBe(404);
    });
  });

  describe('Idempotency-Key', () => {
    const withKey = (key: string) => ({ headers: { 'idempotency-key': key } });

    it('without a key, the same body twice records two events', async () => {
      const body = { email: email('nokey-twice'), event: 'no-key-twice' };
      const a = await project.api.post('/v1/track', body);
      const b = await project.api.post('/v1/track', body);
      expect(a.body.data.event).not.toBe(b.body.data.event);
      expect(await eventsNamed(project.api, 'no-key-twice')).toHaveLength(2);
    });

    it('replays the first response for the same key and body, with Idempotent-Replayed: true, recording one event', async () => {
      const key = `idem-${Date.now()}-same`;
      const body = { email: email('idem'), event: 'idem-same', data: { plan: 'pro' } };
      const first = await project.api.post('/v1/track', body, withKey(key));
      expect(first.status).toBe(200);
      expect(first.headers.get('idempotent-replayed')).toBeNull();

      const second = await project.api.post('/v1/track', body, withKey(key));
      expect(second.status).toBe(200);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(second.body).toStrictEqual(first.body);

      const recorded = await eventsNamed(project.api, 'idem-same');
      expect(recorded.map((e) => e.id)).toEqual([first.body.data.event]);
      expect(await contactEvents(project.api, first.body.data.contact)).toHaveLength(1);
    });

    it('answers 409 CONFLICT for the same key with a different body, and does not do the work', async () => {
      const key = `idem-${Date.now()}-diff`;
      const address = email('idem-diff');
      const first = await project.api.post('/v1/track', { email: address, event: 'idem-diff-a' }, withKey(key));
      expect(first.status).toBe(200);

      const clash = await project.api.post('/v1/track', { email: address, event: 'idem-diff-b' }, withKey(key));
      expect(clash.status).toBe(409);
      expect(clash.body.error.code).toBe('CONFLICT');
      expect(await eventsNamed(project.api, 'idem-diff-b')).toEqual([]);

      const otherContact = await project.api.post('/v1/track', { email: email('idem-diff-2'), event: 'idem-diff-a' }, withKey(key));
      expect(otherContact.status).toBe(409);
      expect(await eventsNamed(project.api, 'idem-diff-a')).toHaveLength(1);

      // The original body still replays.
      const again = await project.api.post('/v1/track', { email: address, event: 'idem-diff-a' }, withKey(key));
      expect(again.status).toBe(200);
      expect(again.body.data.event).toBe(first.body.data.event);
    });

    it('treats a key used in another project as a different key', async () => {
      const key = `idem-${Date.now()}-cross`;
      const body = { email: email('idem-cross'), event: 'idem-cross' };
      const mine = await project.api.post('/v1/track', body, withKey(key));
      const theirs = await other.api.post('/v1/track', body, withKey(key));
      expect(mine.status).toBe(200);
      expect(theirs.status).toBe(200);
      expect(theirs.headers.get('idempotent-replayed')).toBeNull();
      expect(theirs.body.data.event).not.toBe(mine.body.data.event);
      expect(theirs.body.data.contact).not.toBe(mine.body.data.contact);

      // A different body under the same key in the other project is no conflict either.
      const differentBody = await other.api.post('/v1/track', { ...body, event: 'idem-cross-2' }, withKey(`${key}-b`));
      await project.api.post('/v1/track', { ...body, event: 'idem-cross-3' }, withKey(`${key}-b`));
      expect(differentBody.status).toBe(200);

      expect((await eventsNamed(project.api, 'idem-cross')).map((e) => e.id)).toEqual([mine.body.data.event]);
      expect((await eventsNamed(other.api, 'idem-cross')).map((e) => e.id)).toEqual([theirs.body.data.event]);
    });

    it('records one event for 10 parallel requests with the same key and body', async () => {
      const key = `idem-${Date.now()}-parallel`;
      const body = { email: email('idem-parallel'), event: 'idem-parallel', data: { n: 1 } };
      const responses = await Promise.all(Array.from({ length: 10 }, () => project.api.post('/v1/track', body, withKey(key))));

      expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
      const ids = new Set(responses.map((r) => r.body.data.event));
      expect(ids.size).toBe(1);
      expect(responses.filter((r) => r.headers.get('idempotent-replayed') === 'true')).toHaveLength(9);
      const recorded = await eventsNamed(project.api, 'idem-parallel');
      expect(recorded.map((e) => e.id)).toEqual([...ids]);
      expect(await contactEvents(project.api, responses[0].body.data.contact)).toHaveLength(1);
    });

    it('a first attempt that failed does not hold the key: the corrected call goes through', async () => {
      const key = `idem-${Date.now()}-failed`;
      const address = email('idem-failed');
      const refused = await project.api.post('/v1/track', { email: address, event: 'email.sent' }, withKey(key));
      expect(refused.status).toBe(422);

      const retried = await project.api.post('/v1/track', { email: address, event: 'idem-after-failure' }, withKey(key));
      expect(retried.status).toBe(200);
      expect(retried.headers.get('idempotent-replayed')).toBeNull();
      expect((await eventsNamed(project.api, 'idem-after-failure')).map((e) => e.id)).toEqual([retried.body.data.event]);
    });

    it('refuses an empty or over-long key with 422', async () => {
      const long = await project.api.post('/v1/track', { email: email('idem-long'), event: 'idem-long' }, withKey('k'.repeat(256)));
      const empty = await project.api.post('/v1/track', { email: email('idem-long'), event: 'idem-long' }, withKey(''));
      for (const res of [long, empty]) {
        expect(res.status).toBe(422);
        expect(res.body.error.errors.map((e: { field: string }) => e.field)).toEqual(['Idempotency-Key']);
      }
      expect(await eventsNamed(project.api, 'idem-long')).toEqual([]);
    });
  });
});
