// An email SENDING is an attempt under way or one a mailer died in. A message for it (Dapr
// redelivers one still handled after its processingTimeout; a campaign batch run again publishes
// again) claims it only if the attempt is this mailer's own from before a restart, or the claim's
// lease has run out: another mailer's live attempt is left alone, or two mailers send it. Here, on
// the whole embedded platform (boot) and a real SMTP server, with the other mailer's claims written
// as it leaves them.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { CLAIM_LEASE_MS } from '../../domain/mail/claims.ts';
import { emails, OUTBOUND_TOPIC, type EmailDoc, type OutboundMessage } from '../../domain/mail/outbound.ts';
import { bootedPlatform } from '../harness/booted.ts';
import { eventually } from '../harness/client.ts';
import { emailDoc } from '../harness/emails.ts';

const platform = bootedPlatform();

it("a message for an email another mailer holds waits until that claim's lease is over; this mailer's own and lapsed claims are taken at once", { timeout: 60_000 }, async () => {
  const sink = await platform.sink();
  const p = (await platform.start()).platform;
  const me = await readFile(join(platform.dir, 'mailer', 'holder'), 'utf8');
  const live = new Date(Date.now() + CLAIM_LEASE_MS).toISOString();

  // The platform's own mail (no project, no gate), each SENDING as a mailer's attempt left it.
  const sending = (name: string, fields: Partial<EmailDoc>) =>
    emailDoc({ _id: `e-${name}`, projectId: null, kind: 'system', to: `${name}@customer.example`, subject: name, html: `<p>${name}</p>`, status: 'SENDING', attempts: 1, ...fields });
  const held = sending('held', { claimedBy: 'another-mailer', claimedUntil: live });
  const mine = sending('mine', { claimedBy: me, claimedUntil: live }); // this mailer's, before a restart
  const lapsed = sending('lapsed', { claimedBy: 'another-mailer', claimedUntil: new Date(Date.now() - 1_000).toISOString() });
  const unleased = sending('unleased', {}); // claimed before claims had a lease
  await emails(p).insertMany([held, mine, lapsed, unleased]);
  await p.pubsub.publishMany<OutboundMessage>(OUTBOUND_TOPIC, [held, mine, lapsed, unleased].map((e) => ({ emailId: e._id, projectId: null })));

  for (const email of [mine, lapsed, unleased]) await sink.waitForMailTo(email.to, 10_000);
  // The held one's message was tried and refused, again and again, while the lease held.
  const attempt = async () => (await p.store.collection<{ _id: string; data?: OutboundMessage; attempt: number }>('_pubsub').find({})).find((r) => r.data?.emailId === held._id)?.attempt ?? 0;
  await eventually(async () => ((await attempt()) >= 4 ? true : undefined), 15_000, 'the held email tried three times');
  expect(sink.messages.map((m) => m.rcptTo[0]).sort()).toEqual([lapsed.to, mine.to, unleased.to]);
  expect(await emails(p).findOne({ _id: held._id })).toMatchObject({ status: 'SENDING', attempts: 1, claimedBy: 'another-mailer' });

  // The other mailer is gone: once its lease runs out, the message takes the email, and sends it once.
  await emails(p).updateOne({ _id: held._id }, { $set: { claimedUntil: new Date(Date.now() - 1).toISOString() } });
  await sink.waitForMailTo(held.to, 20_000);
  for (const email of [held, mine, lapsed, unleased]) {
    await eventually(async () => ((await emails(p).findOne({ _id: email._id }))?.status === 'DELIVERED' ? true : undefined), 10_000, `${email._id} delivered`);
    const stored = (await emails(p).findOne({ _id: email._id }))!;
    expect(stored).toMatchObject({ attempts: 2 });
    expect(stored.claimedBy).toBeUndefined();
    expect(stored.claimedUntil).toBeUndefined();
  }
  // Idle (no message waiting or being handled), and each went out once.
  await platform.untilIdle();
  expect(sink.messages.map((m) => m.rcptTo[0]).sort()).toEqual([held.to, lapsed.to, mine.to, unleased.to]);
});
