// Recording opens and clicks (domain/mail/tracking.ts) against a real embedded store and rate
// limiter, with the contact actor replaced by a recorder that can fail on demand.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Logger } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { emailDoc } from '../harness/emails.ts';
import { openStore } from '../harness/store.ts';
import { MemoryRateLimiter } from '../../adapters/embedded/rate-limiter.ts';
import { AppError } from '../../domain/errors.ts';
import { emails, type EmailDoc } from '../../domain/mail/outbound.ts';
import { recordEngagement, recordInBackground, type EmailEngagementFields, type RetryPolicy } from '../../domain/mail/tracking.ts';
import type { ActorRuntime } from '../../ports/actors.ts';
import type { Platform } from '../../runtime/platform.ts';

interface Call {
  type: string;
  id: string;
  method: string;
  input: { name: string; data: Record<string, unknown>; eventId: string };
}

const fast: RetryPolicy = { delaysMs: [1, 1] };

let dir: string;
let store: SqliteStore;
let calls: Call[];
/** Errors the next actor calls throw, in order; then calls succeed. */
let failures: unknown[];
let logged: { level: string; args: unknown[] }[];
let p: Platform;

beforeEach(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-tracking-'));
  store = await openStore(dir);
  calls = [];
  failures = [];
  logged = [];
  const actors = {
    async invoke(type: string, id: string, method: string, input: Call['input']) {
      calls.push({ type, id, method, input });
      const failure = failures.shift();
      if (failure) throw failure;
      return { contact: null, eventIds: [input.eventId] };
    },
  } as unknown as ActorRuntime;
  const log = Object.fromEntries(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace'].map((level) => [level, (...args: unknown[]) => logged.push({ level, args })]),
  ) as unknown as Logger;
  p = { store, actors, limiter: new MemoryRateLimiter(), log } as unknown as Platform;
  await emails(p).insertOne(email('e1', 'c1'));
});

afterEach(async () => {
  await store.close().catch(() => undefined);
  await fs.promises.rm(dir, { recursive: true, force: true });
});

function email(id: string, contactId: string | null): EmailDoc {
  return emailDoc({ _id: id, projectId: contactId ? 'p1' : null, contactId, kind: 'marketing', subject: 'Hi', html: '<p>Hi</p>', status: 'DELIVERED', createdAt: new Date().toISOString() });
}

const counters = async (id = 'e1') => (await emails(p).findOne({ _id: id })) as EmailDoc & EmailEngagementFields;

describe('recordEngagement', () => {
  it('counts an open on the email and records email.open on its contact', async () => {
    expect(await recordEngagement(p, { kind: 'open', emailId: 'e1' }, fast)).toBe('recorded');
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ type: 'ContactActor', id: 'c1', method: 'recordSystemEvent', input: { name: 'email.open', data: { emailId: 'e1' } } });
    expect(calls[0].input.eventId).toEqual(expect.any(String));
    const doc = await counters();
    expect(doc.opens).toBe(1);
    expect(doc.firstOpenedAt).toBe(doc.lastOpenedAt);
    expect(doc.clicks).toBeUndefined();
  });

  it('counts a click with its URL', async () => {
    const url = 'https://shop.example/a?b=1';
    expect(await recordEngagement(p, { kind: 'click', emailId: 'e1', url }, fast)).toBe('recorded');
    expect(calls[0].input).toMatchObject({ name: 'email.click', data: { emailId: 'e1', url } });
    const doc = await counters();
    expect(doc.clicks).toBe(1);
    expect(doc.firstClickedAt).toEqual(expect.any(String));
    expect(doc.opens).toBeUndefined();
  });

  it('does not record a repeat within the window, per email and per link', async () => {
    expect(await recordEngagement(p, { kind: 'open', emailId: 'e1' }, fast)).toBe('recorded');
    expect(await recordEngagement(p, { kind: 'open', emailId: 'e1' }, fast)).toBe('repeat');
    const a = { kind: 'click' as const, emailId: 'e1', url: 'https://shop.example/a' };
    expect(await recordEngagement(p, a, fast)).toBe('recorded');
    expect(await recordEngagement(p, a, fast)).toBe('repeat');
    expect(await recordEngagement(p, { ...a, url: 'https://shop.example/b' }, fast)).toBe('recorded');
    await emails(p).insertOne(email('e2', 'c1'));
    expect(await recordEngagement(p, { kind: 'open', emailId: 'e2' }, fast)).toBe('recorded');
    expect(calls.map((c) => c.input.name)).toEqual(['email.open', 'email.click', 'email.click', 'email.open']);
    expect((await counters()).opens).toBe(1);
    expect((await counters()).clicks).toBe(2);
  });

  it('records nothing for an email that is gone or has no contact', async () => {
    expect(await recordEngagement(p, { kind: 'open', emailId: 'missing' }, fast)).toBe('unknown-email');
    await emails(p).insertOne(email('system', null));
    expect(await recordEngagement(p, { kind: 'open', emailId: 'system' }, fast)).toBe('unknown-email');
    expect(calls).toHaveLength(0);
  });

  it('retries a failing actor call with the same event id, so it is recorded once', async () => {
    failures.push(new Error('sidecar unavailable'), new Error('timeout'));
    expect(await recordEngagement(p, { kind: 'open', emailId: 'e1' }, fast)).toBe('recorded');
    expect(calls).toHaveLength(3);
    expect(new Set(calls.map((c) => c.input.eventId)).size).toBe(1);
    // The counter step is not repeated by the retries of the event step.
    expect((await counters()).opens).toBe(1);
  });

  it('stops at once when the contact was deleted meanwhile', async () => {
    failures.push(new AppError('NOT_FOUND', 'Contact not found'));
    expect(await recordEngagement(p, { kind: 'open', emailId: 'e1' }, fast)).toBe('contact-gone');
    expect(calls).toHaveLength(1);
  });
});

describe('recordInBackground', () => {
  it('never rejects, and logs an error naming the email when every attempt failed', async () => {
    failures.push(new Error('down'), new Error('down'), new Error('down'));
    expect(await recordInBackground(p, { kind: 'click', emailId: 'e1', url: 'https://shop.example/' }, fast)).toBe('failed');
    const errors = logged.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].args[0]).toMatchObject({ emailId: 'e1', kind: 'click', url: 'https://shop.example/' });
  });

  it('rides out a store that fails for a moment, counting once', async () => {
    const real = store.collection('emails');
    let failuresLeft = 2;
    const flaky = new Proxy(real, {
      get(target, prop) {
        if (prop === 'updateOne') {
          return async (...args: Parameters<typeof real.updateOne>) => {
            if (failuresLeft-- > 0) throw new Error('store unavailable');
            return real.updateOne(...args);
          };
        }
        const value = Reflect.get(target, prop) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const withFlakyStore = { ...p, store: { collection: (name: string) => (name === 'emails' ? flaky : store.collection(name)) } } as unknown as Platform;
    expect(await recordInBackground(withFlakyStore, { kind: 'open', emailId: 'e1' }, fast)).toBe('recorded');
    expect((await counters()).opens).toBe(1);
    expect(calls).toHaveLength(1);
    expect(logged.filter((l) => l.level === 'error')).toHaveLength(0);
  });
});
