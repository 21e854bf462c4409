import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import type { CampaignState } from '../../actors/campaign/behaviour.ts';
import { queueRecipients } from '../../domain/campaigns/recipients.ts';
import { contentOf, emailContents, emails, ensureEmailIndexes } from '../../domain/mail/outbound.ts';
import type { Platform } from '../../runtime/platform.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';

let dir: string;
let store: SqliteStore;
let p: Platform;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mailroom-content-'));
  store = await openStore(dir);
  await ensureEmailIndexes(store);
  p = embeddedPlatform(store);
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const campaign = (subject: string, body: string) => ({ projectId: 'p1', subject, body, from: 'news@shop.example', fromName: null, replyTo: null }) as unknown as CampaignState;
const recipients = (...ids: string[]) => ids.map((id) => ({ _id: id, email: `${id}@x.example`, data: { name: id } }));

it("keeps a campaign's subject and body once, not in each of its emails", async () => {
  await queueRecipients(p, 'camp1', campaign('Hi {{name}}', '<p>Hello {{name}}</p>'), recipients('a', 'b'), '2026-11-24T10:00:00.000Z');
  await queueRecipients(p, 'camp1', campaign('Hi {{name}}', '<p>Hello {{name}}</p>'), recipients('c'), '2026-11-24T10:00:01.000Z');
  const sent = await emails(p).find({ sourceId: 'camp1' });
  expect(sent).toHaveLength(3);
  expect(sent.every((e) => e.html === undefined && e.subject === undefined && e.contentId === sent[0].contentId)).toBe(true);
  expect(await emailContents(p).countDocuments({})).toBe(1);
  expect(await contentOf(p, sent[2])).toEqual({ subject: 'Hi {{name}}', html: '<p>Hello {{name}}</p>' });

  // Other content (another campaign, or this one's edited before a later send) is kept apart.
  await queueRecipients(p, 'camp2', campaign('Hi', '<p>Other</p>'), recipients('a'), '2026-11-24T10:00:02.000Z');
  const other = (await emails(p).find({ sourceId: 'camp2' }))[0];
  expect(await contentOf(p, other)).toEqual({ subject: 'Hi', html: '<p>Other</p>' });
  expect(await emailContents(p).countDocuments({})).toBe(2);
});

it('reads the content an email carries itself as before', async () => {
  const email = { _id: 'e1', subject: 'S', html: '<p>B</p>', text: 'B' } as Parameters<typeof contentOf>[1];
  expect(await contentOf(p, email)).toEqual({ subject: 'S', html: '<p>B</p>', text: 'B' });
});
