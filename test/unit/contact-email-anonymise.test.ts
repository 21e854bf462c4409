import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { ensureEventIndexes } from '../../domain/events/collection.ts';
import { anonymiseContactEmails } from '../../domain/mail/anonymise.ts';
import { emails, ensureEmailIndexes, type EmailDoc, type EmailStatus } from '../../domain/mail/outbound.ts';
import type { Platform } from '../../runtime/platform.ts';
import { emailDoc } from '../harness/emails.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';

// Deleting a contact removes what its email records say about the person and keeps what the
// project's statistics count.

let dir: string;
let store: SqliteStore;
let p: Platform;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mailroom-anonymise-'));
  store = await openStore(dir);
  await Promise.all([ensureEmailIndexes(store), ensureEventIndexes(store)]);
  p = embeddedPlatform(store);
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const email = (id: string, status: EmailStatus, contactId = 'ann'): EmailDoc & { opens?: number } => ({
  ...emailDoc({
    _id: id,
    contactId,
    kind: 'marketing',
    source: 'campaign',
    sourceId: 'camp1',
    to: `${contactId}@people.example`,
    toName: 'Ann Example',
    subject: 'Hi Ann',
    html: '<p>Hi Ann</p>',
    vars: { name: 'Ann' },
    headers: { 'X-Customer': 'ann-42' },
    status,
    reason: `250 ok <${contactId}@people.example>`,
    messageId: `<${id}@shop.example>`,
    createdAt: '2026-11-24T10:00:00.000Z',
  }),
  opens: 2,
});

it('removes the address, content, variables, headers and server reply, and keeps status, counters, source and times', async () => {
  await emails(p).insertMany([email('e1', 'DELIVERED'), email('e2', 'BOUNCED'), email('e3', 'DELIVERED', 'bob')]);
  await anonymiseContactEmails(p, 'p1', 'ann');
  const [e1, e2] = await emails(p).find({ _id: { $in: ['e1', 'e2'] } }, { sort: { _id: 1 } });
  for (const field of ['to', 'toName', 'subject', 'html', 'vars', 'headers', 'reason']) expect(e1, field).not.toHaveProperty(field);
  expect(JSON.stringify([e1, e2])).not.toContain('ann');
  expect(e1).toMatchObject({ contactId: null, status: 'DELIVERED', opens: 2, sourceId: 'camp1', projectId: 'p1', createdAt: '2026-11-24T10:00:00.000Z' });
  expect(e2).toMatchObject({ contactId: null, status: 'BOUNCED' });
  // Another contact's email is untouched.
  expect(await emails(p).findOne({ _id: 'e3' })).toMatchObject({ contactId: 'bob', to: 'bob@people.example', html: '<p>Hi Ann</p>' });
});

it('fails an email not sent yet, so that none leaves without an address', async () => {
  await emails(p).insertMany([email('q1', 'QUEUED'), email('s1', 'SENDING')]);
  await anonymiseContactEmails(p, 'p1', 'ann');
  for (const e of await emails(p).find({ _id: { $in: ['q1', 's1'] } })) {
    expect(e).toMatchObject({ status: 'FAILED', reason: 'The contact was deleted', contactId: null });
    expect(e).not.toHaveProperty('to');
  }
});

it('keeps when a complaint came, and drops what it said, so campaign stats keep counting it', async () => {
  await emails(p).insertMany([email('e1', 'DELIVERED'), { ...email('e2', 'DELIVERED'), complaint: { at: '2026-11-24T11:00:00.000Z', detail: 'ann@people.example marked it spam' } }]);
  await anonymiseContactEmails(p, 'p1', 'ann');
  expect((await emails(p).findOne({ _id: 'e2' }))?.complaint).toEqual({ at: '2026-11-24T11:00:00.000Z' });
  expect((await emails(p).findOne({ _id: 'e1' }))?.complaint).toBeUndefined();
});
