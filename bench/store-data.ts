/**
 * The data of bench/store.ts: one project's contacts and events in the shapes the product writes
 * them (see actors/contact/actor.ts `perform`), generated from a seeded PRNG so every run and both
 * stores get the same documents. Used by the loader (bench/store-load.ts), which writes them, and
 * by the benchmark, which needs the contacts' ids and emails for its requests.
 *
 * - events: `{_id, projectId, contactId, name, data, system, createdAt}`, in time order over two
 *   years (UUIDv7 ids of their time), each for a contact that exists by then, picked uniformly:
 *   older contacts have more history (a contact's expected count is about (events ÷ contacts) ×
 *   ln(contacts ÷ its rank)), the newest have few or none. Tracked names with their data, and the
 *   system events the mailer records (`email.delivery`, `email.open`, `email.click`).
 * - contacts: the contact projection (`domain/contacts/collection.ts`) with `eventStats`
 *   (count, first, last per event name) computed from the very events above, and `data` holding
 *   profile keys plus the keys tracked events leave on a contact (`path`, `feature`, ...).
 * - `_actor_state`: the ContactActor's state of each contact as the journal store's version kept
 *   it (the projection without `_id` and `eventStats`); loaded for that version only, since the
 *   ContactActor now reads the contact document itself.
 * - `data_fields`: the project's data key types, as `recordDataTypes` leaves them.
 */
import { v7 } from 'uuid';
import { eventKey, type ContactDoc, type EventStat } from '../domain/contacts/collection.ts';
import type { EventDoc } from '../domain/events/collection.ts';
import { mulberry32 } from '../test/harness/prng.ts';

const SEED = 0x570e; // "store"
/** The newest instant in the data; everything lies in the two years before it. */
export const DATA_END = Date.parse('2026-11-01T00:00:00Z');
const SPAN = 730 * 86_400_000;
const DATA_START = DATA_END - SPAN;

const MAIL_HOSTS = ['gmail.com', 'outlook.com', 'yahoo.com', 'proton.me', 'company.example', 'shop.example'];
const PLANS = ['free', 'free', 'free', 'starter', 'pro', 'pro', 'team', 'enterprise'];
const COUNTRIES = ['US', 'US', 'US', 'DE', 'DE', 'FR', 'GB', 'GB', 'NL', 'ES', 'IT', 'BR', 'IN', 'JP', 'CA', 'AU'];
const FIRST_NAMES = ['Ann', 'Bo', 'Chen', 'Dana', 'Emil', 'Fatima', 'Greta', 'Hiro', 'Ines', 'Jon', 'Kemal', 'Lea'];
const PATHS = ['/', '/pricing', '/docs', '/docs/api', '/blog', '/blog/launch', '/changelog', '/settings', '/billing', '/integrations'];
const FEATURES = ['export', 'import', 'reports', 'api_keys', 'webhooks', 'sso', 'dashboards', 'alerts'];

/** Event names with their share of all events and the data each carries. */
const NAMES: { name: string; share: number; system: boolean; data(rnd: () => number, n: number): EventDoc['data'] }[] = [
  { name: 'page_view', share: 0.4, system: false, data: (rnd) => ({ path: pick(rnd, PATHS) }) },
  { name: 'feature_used', share: 0.12, system: false, data: (rnd) => ({ feature: pick(rnd, FEATURES) }) },
  { name: 'login', share: 0.1, system: false, data: () => ({}) },
  { name: 'purchase', share: 0.05, system: false, data: (rnd) => ({ amount: Math.round(rnd() * 50_000) / 100, currency: 'EUR', plan: pick(rnd, PLANS) }) },
  { name: 'invite_sent', share: 0.03, system: false, data: (rnd) => ({ invites: 1 + Math.floor(rnd() * 5) }) },
  { name: 'email.delivery', share: 0.13, system: true, data: (_rnd, n) => ({ emailId: syntheticId(n, 0x0e) }) },
  { name: 'email.open', share: 0.12, system: true, data: (_rnd, n) => ({ emailId: syntheticId(n, 0x0e) }) },
  { name: 'email.click', share: 0.05, system: true, data: (rnd, n) => ({ emailId: syntheticId(n, 0x0e), url: `https://shop.example${pick(rnd, PATHS)}?utm_source=newsletter` }) },
];
const KEYS = NAMES.map((n) => eventKey(n.name));
/** Cumulative shares, to pick a name with one random number. */
const CUMULATIVE = NAMES.map((_, i) => NAMES.slice(0, i + 1).reduce((sum, n) => sum + n.share, 0));

function pick<T>(rnd: () => number, list: readonly T[]): T {
  return list[Math.floor(rnd() * list.length)];
}

/** A UUIDv7 of instant `msecs` whose random bits come from (n, salt): the same on every run. */
function syntheticId(n: number, salt: number, msecs = DATA_START + (n % SPAN)): string {
  const random = new Uint8Array(16);
  let x = (Math.imul(n + 1, 0x9e3779b1) ^ salt) >>> 0;
  for (let b = 0; b < 16; b++) {
    x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) >>> 0;
    random[b] = x & 0xff;
  }
  return v7({ msecs, seq: n >>> 0, random });
}

/** When contact i (0 = the oldest) was created: evenly over the span. */
const createdAt = (i: number, contacts: number) => DATA_START + Math.floor((SPAN * i) / contacts);

export const contactId = (i: number, contacts: number): string => syntheticId(i, 0xc0, createdAt(i, contacts));
export const contactEmail = (i: number): string => `user${i}@${MAIL_HOSTS[i % MAIL_HOSTS.length]}`;

/**
 * Per contact and event name: how often, first and last time (ms). Typed arrays, so a million
 * contacts cost ~160 MB here rather than a million objects.
 */
export class EventTally {
  readonly count: Uint32Array;
  readonly first: Float64Array;
  readonly last: Float64Array;

  constructor(contacts: number) {
    this.count = new Uint32Array(contacts * NAMES.length);
    this.first = new Float64Array(contacts * NAMES.length);
    this.last = new Float64Array(contacts * NAMES.length);
  }

  add(contact: number, name: number, at: number): void {
    const slot = contact * NAMES.length + name;
    if (this.count[slot]++ === 0) this.first[slot] = at;
    this.last[slot] = at; // events come in time order
  }
}

/**
 * The events, in batches of `batchSize`, in time order; tallied into `tally` as they are made,
 * so the contacts generated afterwards carry matching `eventStats`.
 */
export function* eventBatches(projectId: string, contacts: number, events: number, tally: EventTally, batchSize: number): Generator<EventDoc[]> {
  const rnd = mulberry32(SEED);
  const ids: string[] = Array.from({ length: contacts }, (_, i) => contactId(i, contacts));
  let batch: EventDoc[] = [];
  for (let k = 0; k < events; k++) {
    const at = DATA_START + Math.floor((SPAN * (k + 0.5)) / events);
    // The contacts created by then (contact i is created at createdAt(i)), one picked uniformly.
    const existing = Math.min(contacts, Math.floor(((at - DATA_START) * contacts) / SPAN) + 1);
    const contact = Math.floor(rnd() * existing);
    const u = rnd();
    let name = CUMULATIVE.findIndex((c) => u < c);
    if (name === -1) name = NAMES.length - 1;
    const kind = NAMES[name];
    tally.add(contact, name, at);
    batch.push({
      _id: syntheticId(k, 0xe7, at),
      projectId,
      contactId: ids[contact],
      name: kind.name,
      data: kind.data(rnd, k),
      system: kind.system,
      createdAt: new Date(at).toISOString(),
    });
    if (batch.length === batchSize) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

export interface ContactBatch {
  contacts: ContactDoc[];
  /** The ContactActor's saved state of the same contacts. */
  actorStates: { _id: string; type: string; id: string; state: Omit<ContactDoc, '_id' | 'eventStats'> }[];
}

/** The contacts (oldest first) with their actor states, in batches of `batchSize`. */
export function* contactBatches(projectId: string, contacts: number, tally: EventTally, batchSize: number): Generator<ContactBatch> {
  const rnd = mulberry32(SEED ^ 0xc0);
  let batch: ContactBatch = { contacts: [], actorStates: [] };
  for (let i = 0; i < contacts; i++) {
    const created = createdAt(i, contacts);
    const eventStats: Record<string, EventStat> = {};
    let lastTracked = created;
    for (let n = 0; n < NAMES.length; n++) {
      const slot = i * NAMES.length + n;
      const count = tally.count[slot];
      if (count === 0) continue;
      eventStats[KEYS[n]] = { count, first: new Date(tally.first[slot]).toISOString(), last: new Date(tally.last[slot]).toISOString() };
      if (!NAMES[n].system) lastTracked = Math.max(lastTracked, tally.last[slot]);
    }
    const data: ContactDoc['data'] = {
      firstName: pick(rnd, FIRST_NAMES),
      plan: pick(rnd, PLANS),
      country: pick(rnd, COUNTRIES),
      seats: 1 + Math.floor(rnd() * rnd() * 50),
      signupDate: new Date(created).toISOString(),
    };
    // Tracked events save their data on the contact: the keys of the names it has.
    if (eventStats.page_view) data.path = pick(rnd, PATHS);
    if (eventStats.feature_used) data.feature = pick(rnd, FEATURES);
    if (eventStats.purchase) Object.assign(data, { amount: Math.round(rnd() * 50_000) / 100, currency: 'EUR' });
    if (eventStats.invite_sent) data.invites = 1 + Math.floor(rnd() * 5);
    const _id = contactId(i, contacts);
    const state = {
      projectId,
      email: contactEmail(i),
      subscribed: rnd() < 0.92,
      data,
      createdAt: new Date(created).toISOString(),
      updatedAt: new Date(lastTracked).toISOString(),
    };
    batch.contacts.push({ _id, ...state, eventStats });
    batch.actorStates.push({ _id: `ContactActor/${_id}`, type: 'ContactActor', id: _id, state });
    if (batch.contacts.length === batchSize) {
      yield batch;
      batch = { contacts: [], actorStates: [] };
    }
  }
  if (batch.contacts.length) yield batch;
}

/** The project's `data_fields`, as `recordDataTypes` leaves them for the keys above. */
export function dataFields(projectId: string) {
  const types: [string, string][] = [
    ['firstName', 'string'],
    ['plan', 'string'],
    ['country', 'string'],
    ['seats', 'number'],
    ['signupDate', 'date'],
    ['path', 'string'],
    ['feature', 'string'],
    ['amount', 'number'],
    ['currency', 'string'],
    ['invites', 'number'],
  ];
  return types.map(([key, type]) => ({ _id: `${projectId}/${key}`, projectId, key, types: [type] }));
}
