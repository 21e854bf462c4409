import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { type ApiClient, type ApiResponse, type EventRecord } from '../harness/client.ts';
import { startInstance, type Instance } from '../harness/instance.ts';

// Embedded mode keeps everything under DATA_DIR: what the API acknowledged must be there after
// the process is killed (SIGKILL, no shutdown) and started again on the same directory.

type Data = Record<string, string | number | boolean>;

interface Contact {
  id: string;
  email: string;
  subscribed: boolean;
  data: Data;
}

/** What the API acknowledged: each contact with its expected state, each tracked event. */
class Accepted {
  readonly contacts = new Map<string, { email: string; subscribed: boolean; data: Data }>();
  readonly events = new Map<string, { contactId: string; name: string; data: Data }>();
  /** contact.subscribed / contact.unsubscribed events the calls must have recorded. */
  systemEvents = 0;

  contact(id: string, email: string, subscribed: boolean): { email: string; subscribed: boolean; data: Data } {
    let c = this.contacts.get(id);
    if (!c) this.contacts.set(id, (c = { email, subscribed, data: {} }));
    return c;
  }
}

/** Every contact of the project, through the cursor pages. */
async function allContacts(api: ApiClient): Promise<{ contacts: Contact[]; total: number }> {
  const contacts: Contact[] = [];
  let cursor: string | null = null;
  let total = -1;
  do {
    const res: ApiResponse = await api.get(`/contacts?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    if (cursor === null) total = res.body.data.total;
    contacts.push(...res.body.data.contacts);
    cursor = res.body.data.cursor;
  } while (cursor);
  return { contacts, total };
}

async function eventsOf(api: ApiClient, contactId: string): Promise<EventRecord[]> {
  const res = await api.get(`/events/contact/${contactId}?limit=100`);
  expect(res.status).toBe(200);
  return res.body.data;
}

/** Checks that every accepted contact and event is there, exactly, with its data. */
async function expectAllThere(api: ApiClient, accepted: Accepted): Promise<void> {
  const { contacts, total } = await allContacts(api);
  expect(total).toBe(accepted.contacts.size);
  expect(contacts.map((c) => c.id).sort()).toEqual([...accepted.contacts.keys()].sort());
  for (const contact of contacts) {
    const expected = accepted.contacts.get(contact.id)!;
    expect({ email: contact.email, subscribed: contact.subscribed, data: contact.data }).toStrictEqual(expected);
  }

  const tracked: EventRecord[] = [];
  let system = 0;
  for (const id of accepted.contacts.keys()) {
    const events = await eventsOf(api, id);
    expect(events.length).toBeLessThan(100);
    tracked.push(...events.filter((e) => !e.system));
    system += events.filter((e) => e.system).length;
  }
  expect(tracked.map((e) => e.id).sort()).toEqual([...accepted.events.keys()].sort());
  for (const event of tracked) {
    expect({ contactId: event.contactId, name: event.name, data: event.data }).toStrictEqual(accepted.events.get(event.id));
  }
  expect(system).toBe(accepted.systemEvents);

  const stats = await api.get('/events/stats');
  expect(stats.body.data.total).toBe(accepted.events.size + accepted.systemEvents);
}

describe('a restart of the embedded process', () => {
  let instance: Instance;
  let project: ProjectAccess;
  const accepted = new Accepted();
  /** Requests made with an Idempotency-Key before the crash, with the response they got. */
  const keyed: { key: string; body: unknown; response: unknown }[] = [];

  beforeAll(async () => {
    instance = await startInstance({ process: true });
    project = await newProject(instance, 'Restart');
  });
  afterAll(() => instance?.dispose());

  it('loses no accepted contact or event', { timeout: 60_000 }, async () => {
    // Sequential writes: contacts with data, then events for them and for new addresses.
    for (let i = 0; i < 5; i++) {
      const data = { plan: i % 2 ? 'pro' : 'free', seats: i, vip: i === 3, since: `2024-0${i + 1}-01T00:00:00.000Z` };
      const res = await project.api.post('/contacts', { email: `seq-${i}@example.com`, subscribed: i !== 4, data });
      expect(res.status).toBe(201);
      Object.assign(accepted.contact(res.body.data.id, `seq-${i}@example.com`, i !== 4).data, data);
    }
    for (let i = 0; i < 10; i++) {
      const address = `seq-${i}@example.com`;
      const data = { [`step${i}`]: i * 10, last: `event-${i}` };
      const subscribed = i === 1 ? false : undefined; // seq-1 opts out: a contact.unsubscribed
      const res = await project.api.post('/v1/track', { email: address, event: `seq-event-${i % 3}`, data, subscribed });
      expect(res.status).toBe(200);
      const contact = accepted.contact(res.body.data.contact, address, true);
      if (subscribed === false) {
        contact.subscribed = false;
        accepted.systemEvents++;
      }
      Object.assign(contact.data, data);
      accepted.events.set(res.body.data.event, { contactId: res.body.data.contact, name: `seq-event-${i % 3}`, data });
    }

    // A burst of concurrent calls: 50 addresses (some known), 4 calls each, every call with its own keys.
    const burst = Array.from({ length: 200 }, (_, i) => {
      const address = i % 50 < 5 ? `seq-${i % 50}@example.com` : `burst-${i % 50}@example.com`;
      const data = { [`k${i}`]: i, [`s${i}`]: `value ${i}`, [`b${i}`]: i % 2 === 0 };
      const key = i % 10 === 0 ? `restart-key-${i}` : undefined;
      return { address, body: { email: address, event: `burst-${i % 4}`, data }, key };
    });
    const responses = await Promise.all(
      burst.map((b) => project.api.post('/v1/track', b.body, b.key ? { headers: { 'idempotency-key': b.key } } : {})),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(burst.length).fill(200));
    responses.forEach((res, i) => {
      const { address, body, key } = burst[i];
      Object.assign(accepted.contact(res.body.data.contact, address, true).data, body.data);
      accepted.events.set(res.body.data.event, { contactId: res.body.data.contact, name: body.event, data: body.data });
      if (key) keyed.push({ key, body, response: res.body });
    });
    expect(accepted.contacts.size).toBe(50 + 5);
    expect(accepted.events.size).toBe(210);

    // What the API shows before the crash is what it must show after it.
    await expectAllThere(project.api, accepted);

    await instance.stop(); // SIGKILL
    await instance.restart();

    await expectAllThere(project.api, accepted);
  });

  it('still answers a replay of an Idempotency-Key used before the crash with the first response', async () => {
    expect(keyed.length).toBe(20);
    const before = (await project.api.get('/events/stats')).body.data.total;
    for (const { key, body, response } of keyed) {
      const replay = await project.api.post('/v1/track', body, { headers: { 'idempotency-key': key } });
      expect(replay.status).toBe(200);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toStrictEqual(response);
    }
    expect((await project.api.get('/events/stats')).body.data.total).toBe(before);
  });

  it('keeps API keys, sessions and logins working across a restart', { timeout: 60_000 }, async () => {
    await instance.restart();

    const projects = await instance.api.get('/projects', { auth: project.token });
    expect(projects.status).toBe(200);
    expect(JSON.stringify(projects.body.data)).toContain(project.projectId);

    const login = await instance.api.post('/auth/login', { email: project.email, password: (project as ProjectAccess & { password: string }).password });
    expect(login.status).toBe(200);
    expect((await instance.api.get('/projects', { auth: login.body.data.token })).status).toBe(200);

    const list = await project.api.get('/contacts?limit=1');
    expect(list.status).toBe(200);
    expect(list.body.data.total).toBeGreaterThanOrEqual(accepted.contacts.size);

    const tracked = await instance.api.post('/v1/track', { email: 'after-restart@example.com', event: 'after-restart' }, { auth: project.publicKey });
    expect(tracked.status).toBe(200);
    // The public key is still only a public key.
    expect((await instance.api.get('/events', { auth: project.publicKey })).status).toBe(403);
    expect((await instance.api.get('/events', { auth: 'sk_not-a-key' })).status).toBe(401);

    // New events after the restart are listed before the old ones.
    const newest = await project.api.get('/events?limit=1');
    expect(newest.body.data[0].id).toBe(tracked.body.data.event);
  });
});

describe('a clean restart of the in-process platform', () => {
  let instance: Instance;
  let project: ProjectAccess;

  beforeAll(async () => {
    instance = await startInstance();
    project = await newProject(instance, 'Clean restart');
  });
  afterAll(() => instance?.dispose());

  it('keeps keys, sessions, contacts and events after a graceful stop and start', async () => {
    const tracked = await project.api.post('/v1/track', { email: 'clean@example.com', event: 'before-restart', data: { n: 1 } });
    expect(tracked.status).toBe(200);

    await instance.restart();
    // The in-process restart is quicker than the event loop's look at the sockets the old server
    // closed; let fetch see them closed before it reuses one.
    await new Promise((resolve) => setTimeout(resolve, 50));

    expect((await instance.api.get('/projects', { auth: project.token })).status).toBe(200);
    const contact = await project.api.get(`/contacts/${tracked.body.data.contact}`);
    expect(contact.status).toBe(200);
    expect(contact.body.data).toMatchObject({ email: 'clean@example.com', subscribed: true, data: { n: 1 } });
    const events = await project.api.get(`/events/contact/${tracked.body.data.contact}`);
    expect(events.body.data).toEqual([expect.objectContaining({ id: tracked.body.data.event, name: 'before-restart', data: { n: 1 } })]);
    const again = await instance.api.post('/v1/track', { email: 'clean@example.com', event: 'after-restart' }, { auth: project.publicKey });
    expect(again.status).toBe(200);
    expect(again.body.data.contact).toBe(tracked.body.data.contact);
  });
});
