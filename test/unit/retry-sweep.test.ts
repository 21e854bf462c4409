// The sweep that hands emails waiting out a soft bounce back to the queue (apps/mailer/retries.ts):
// a due email is leased and published once; one not due, or no longer SENDING, is left alone; a
// lease that ran out (its message lost) is made up for.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sweepDueRetries } from '../../apps/mailer/retries.ts';
import { applyEmailResult } from '../../domain/mail/results.ts';
import { emails, ensureEmailIndexes, OUTBOUND_TOPIC, type EmailDoc, type OutboundMessage } from '../../domain/mail/outbound.ts';
import { RETRY_LEASE_MS } from '../../domain/mail/soft-bounces.ts';
import type { Platform } from '../../runtime/platform.ts';
import { emailDoc } from '../harness/emails.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';

describe('the sweep for due tries after a soft bounce', () => {
  let dir: string;
  let p: Platform;
  let published: OutboundMessage[];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mailroom-retries-'));
    p = embeddedPlatform(await openStore(dir));
    await ensureEmailIndexes(p.store);
    published = [];
    const publishMany = p.pubsub.publishMany.bind(p.pubsub);
    p.pubsub.publishMany = async <T>(topic: string, messages: T[]) => {
      if (topic === OUTBOUND_TOPIC) published.push(...(messages as OutboundMessage[]));
      await publishMany(topic, messages);
    };
  });
  afterEach(async () => {
    await p.store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString();
  const email = (id: string, fields: Partial<EmailDoc>): EmailDoc =>
    emailDoc({ _id: id, to: `${id}@customer.example`, from: 'x@sender.example', status: 'SENDING', createdAt: at(-60_000), softFailures: { firstAt: at(-60_000), count: 1 }, ...fields });

  it('publishes each due email once, with the lease its claim asks for, and leaves the others', async () => {
    await emails(p).insertMany([
      email('due', { retryAt: at(-1_000) }),
      email('later', { retryAt: at(60_000) }),
      email('bounced', { status: 'BOUNCED', retryAt: at(-1_000) }),
      email('sending', {}),
    ]);
    await sweepDueRetries(p);
    expect(published.map((m) => m.emailId)).toEqual(['due']);
    const leased = await emails(p).findOne({ _id: 'due' });
    expect(published[0]).toEqual({ emailId: 'due', projectId: 'p1', retryAt: leased!.retryAt });
    expect(Date.parse(leased!.retryAt!) - Date.now()).toBeGreaterThan(RETRY_LEASE_MS - 5_000);

    await sweepDueRetries(p);
    expect(published, 'leased: not due again until the lease runs out').toHaveLength(1);
  });

  it('publishes an email again once its lease ran out (the message was lost)', async () => {
    await emails(p).insertOne(email('lost', { retryAt: at(-1_000) }));
    await sweepDueRetries(p);
    const first = published[0].retryAt!;
    // The lease runs out with the email still waiting: nobody claimed it.
    await emails(p).updateOne({ _id: 'lost' }, { $set: { retryAt: at(-1) } });
    await sweepDueRetries(p);
    expect(published.map((m) => m.emailId)).toEqual(['lost', 'lost']);
    expect(published[1].retryAt).not.toBe(first);
  });

  it('a bounce reported while the email waits ends its tries: BOUNCED, with no next try left on it', async () => {
    await emails(p).insertOne(email('reported', { retryAt: at(-1_000) }));
    await applyEmailResult(p, { emailId: 'reported', projectId: 'p1', contactId: 'gone', event: 'email.bounce', bounce: { type: 'hard', status: '5.1.1' }, at: at(0) });
    const bounced = await emails(p).findOne({ _id: 'reported' });
    expect(bounced).toMatchObject({ status: 'BOUNCED', bounce: { type: 'hard', status: '5.1.1' } });
    expect(bounced!.retryAt).toBeUndefined();
    await sweepDueRetries(p);
    expect(published).toEqual([]);
  });
});
