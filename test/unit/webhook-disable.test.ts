// An endpoint failing for 24 h is disabled and its project's admins are told by email; one that
// received other deliveries meanwhile is only having trouble with one event, and stays on.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { accounts, ensureAccountIndexes } from '../../domain/accounts/collections.ts';
import { emails, ensureEmailIndexes } from '../../domain/mail/outbound.ts';
import { ensureWebhookIndexes, webhookDeliveries, webhooks, type DeliveryDoc } from '../../domain/webhooks/collection.ts';
import { disableIfFailingSince } from '../../domain/webhooks/disable.ts';
import type { Platform } from '../../runtime/platform.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';

let dir: string;
let store: SqliteStore;
let p: Platform;
const since = '2030-01-01T00:00:00.000Z';

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mailroom-webhook-disable-'));
  store = await openStore(dir);
  await ensureEmailIndexes(store);
  await ensureAccountIndexes(store);
  await ensureWebhookIndexes(store);
  p = embeddedPlatform(store);
  const { users, memberships, projects } = accounts(store);
  await projects.insertOne({ _id: 'p1', name: 'Shop', language: 'en', createdAt: since } as never);
  await users.insertOne({ _id: 'u1', email: 'admin@shop.example', passwordHash: 'x', emailVerified: true, createdAt: since });
  await users.insertOne({ _id: 'u2', email: 'member@shop.example', passwordHash: 'x', emailVerified: true, createdAt: since });
  await memberships.insertOne({ _id: 'p1/u1', projectId: 'p1', userId: 'u1', role: 'ADMIN', createdAt: since });
  await memberships.insertOne({ _id: 'p1/u2', projectId: 'p1', userId: 'u2', role: 'MEMBER', createdAt: since });
  await webhooks(store).insertOne({
    _id: 'w1', projectId: 'p1', url: 'https://hooks.example/in', description: null, events: ['*'], enabled: true,
    secret: 'whsec_x', disabledReason: null, createdAt: since, updatedAt: since,
  });
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const delivery = (id: string, status: DeliveryDoc['status'], updatedAt: string): DeliveryDoc => ({
  _id: id, projectId: 'p1', webhookId: 'w1', eventId: id, type: 'x', status, attempts: [], nextAttemptAt: null, replayOf: null,
  payload: { type: 'x', timestamp: since, data: { eventId: id, contact: null, event: { name: 'x', data: {} } } }, createdAt: since, updatedAt,
});

it('disables an endpoint nothing reached for 24 h and emails the admins of its project', async () => {
  await webhookDeliveries(store).insertOne(delivery('d0', 'DELIVERED', '2029-12-31T23:59:59.000Z')); // before: does not count
  await disableIfFailingSince(p, 'w1', since);
  expect(await webhooks(store).findOne({ _id: 'w1' })).toMatchObject({ enabled: false, disabledReason: expect.stringContaining('24 hours') });
  const sent = await emails(p).find({ kind: 'system' });
  expect(sent.map((e) => e.to)).toEqual(['admin@shop.example']);
  expect(sent[0].text).toContain('https://hooks.example/in');
});

it('keeps an endpoint on when another delivery reached it in that time, and tells no one', async () => {
  await webhookDeliveries(store).insertOne(delivery('d1', 'DELIVERED', '2030-01-01T05:00:00.000Z'));
  await disableIfFailingSince(p, 'w1', since);
  expect(await webhooks(store).findOne({ _id: 'w1' })).toMatchObject({ enabled: true });
  expect(await emails(p).countDocuments({ kind: 'system' })).toBe(0);
});
