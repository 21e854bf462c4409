// An email SENDING is an attempt under way or one a mailer died in. A message for it (Dapr
// redelivers one still handled after its processingTimeout; a campaign batch run again publishes
// again) claims it only if the attempt is this mailer's own from before a restart, or the claim's
// lease has run out: another mailer's live attempt is left alone, or two mailers send it. The
// message is then done with, and once the lease is over the retry sweep hands the email to the
// queue again, as it does any lapsed claim whose message is gone. Here, on the whole embedded
// platform (boot) and a real SMTP server, with the other mailer's claims written as it leaves them.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it, vi } from 'vitest';
import { sweepDueRetries } from '../../apps/mailer/retries.ts';
import { CLAIM_LEASE_MS } from '../../domain/mail/claims.ts';
import { emails, OUTBOUND_TOPIC, type EmailDoc, type OutboundMessage } from '../../domain/mail/outbound.ts';
import type { Platform } from '../../runtime/platform.ts';
import { bootedPlatform } from '../harness/booted.ts';
import { eventually } from '../harness/client.ts';
import { emailDoc } from '../harness/emails.ts';

const platform = bootedPlatform();
// The retry sweep every 0.36 s (a twentieth of the soft-bounce window), so a lapsed lease is seen at once.
const env = { SOFT_BOUNCE_RETRY_HOURS: '0.002' };

/** The platform's own mail (no project, no gate), SENDING as a mailer's attempt left it. */
const sending = (name: string, fields: Partial<EmailDoc>) =>
  emailDoc({ _id: `e-${name}`, projectId: null, kind: 'system', to: `${name}@customer.example`, subject: name, html: `<p>${name}</p>`, status: 'SENDING', attempts: 1, ...fields });
const inQueue = (p: Platform) => p.store.collection<{ _id: string; data?: OutboundMessage }>('_pubsub').find({});
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

it("a message for an email another mailer holds is done with; once that claim's lease is over the email is sent, as are this mailer's own and lapsed claims at once", { timeout: 60_000 }, async () => {
  const sink = await platform.sink();
  const p = (await platform.start({ env })).platform;
  const me = await readFile(join(platform.dir, 'mailer', 'holder'), 'utf8');
  const leaseEnds = Date.now() + 8_000;

  const held = sending('held', { claimedBy: 'another-mailer', claimedUntil: new Date(leaseEnds).toISOString() });
  const mine = sending('mine', { claimedBy: me, claimedUntil: new Date(Date.now() + CLAIM_LEASE_MS).toISOString() }); // this mailer's, before a restart
  const lapsed = sending('lapsed', { claimedBy: 'another-mailer', claimedUntil: ago(1_000) });
  const unleased = sending('unleased', {}); // claimed before claims had a lease
  const lost = sending('lost', { claimedBy: 'another-mailer', claimedUntil: ago(1_000) }); // its message gone
  await emails(p).insertMany([held, mine, lapsed, unleased, lost]);
  await p.pubsub.publishMany<OutboundMessage>(OUTBOUND_TOPIC, [held, mine, lapsed, unleased].map((e) => ({ emailId: e._id, projectId: null })));

  for (const email of [mine, lapsed, unleased, lost]) await sink.waitForMailTo(email.to, 5_000);
  // The held one's message is done with while the lease holds, and the email left to its mailer.
  await eventually(async () => ((await inQueue(p)).some((r) => r.data?.emailId === held._id) ? undefined : true), 5_000, "the held email's message done with");
  expect(Date.now()).toBeLessThan(leaseEnds);
  expect(await emails(p).findOne({ _id: held._id })).toMatchObject({ status: 'SENDING', attempts: 1, claimedBy: 'another-mailer' });
  expect(sink.messages.map((m) => m.rcptTo[0]).sort()).toEqual([lapsed.to, lost.to, mine.to, unleased.to]);

  // The other mailer is gone: once its lease runs out, the sweep hands the email on, and it goes out once.
  await sink.waitForMailTo(held.to, 20_000);
  expect(Date.now()).toBeGreaterThanOrEqual(leaseEnds);
  for (const email of [held, mine, lapsed, unleased, lost]) {
    await eventually(async () => ((await emails(p).findOne({ _id: email._id }))?.status === 'DELIVERED' ? true : undefined), 10_000, `${email._id} delivered`);
    const stored = (await emails(p).findOne({ _id: email._id }))!;
    expect(stored).toMatchObject({ attempts: 2 });
    expect([stored.claimedBy, stored.claimedUntil, stored.retryAt]).toEqual([undefined, undefined, undefined]);
  }
  // Idle (no message waiting or being handled), and each went out once.
  await platform.untilIdle();
  expect(sink.messages.map((m) => m.rcptTo[0]).sort()).toEqual([held.to, lapsed.to, lost.to, mine.to, unleased.to]);
});

it("the sweep hands a lapsed claim to the queue once, as a due try, unless the attempt is this process's own and still running", async () => {
  const p = (await platform.start({ mailer: false })).platform;
  const abandoned = sending('abandoned', { claimedBy: 'another-mailer', claimedUntil: ago(1_000) });
  const running = sending('running', { claimedBy: 'this-mailer', claimedUntil: ago(1_000) }); // outlived its lease here
  const live = sending('live', { claimedBy: 'another-mailer', claimedUntil: new Date(Date.now() + CLAIM_LEASE_MS).toISOString() });
  await emails(p).insertMany([abandoned, running, live]);
  const published = vi.spyOn(p.pubsub, 'publishMany');

  await sweepDueRetries(p, new Set([running._id]));
  await sweepDueRetries(p, new Set([running._id])); // the next sweep: already leased, not handed on again
  const messages = published.mock.calls.flatMap(([topic, batch]) => (topic === OUTBOUND_TOPIC ? batch : []));
  const leased = (await emails(p).findOne({ _id: abandoned._id }))!;
  expect(messages).toEqual([{ emailId: abandoned._id, projectId: null, retryAt: leased.retryAt }]);
  expect(leased).toMatchObject({ status: 'SENDING', attempts: 1 });
  expect([leased.claimedBy, leased.claimedUntil]).toEqual([undefined, undefined]);
  for (const email of [running, live]) expect(await emails(p).findOne({ _id: email._id })).toEqual(email);
});
