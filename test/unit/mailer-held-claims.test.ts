// Embedded, this process alone handles the queue, so the mailer holds a QUEUED email's claim in
// memory and writes it with the attempt's end (domain/mail/claims.ts, HELD): one write an email
// instead of two. Here, on the whole embedded platform (boot) and a real SMTP server that holds its
// answer, so the attempt is caught in the middle.
import { expect, it } from 'vitest';
import { emails, OUTBOUND_TOPIC, type OutboundMessage } from '../../domain/mail/outbound.ts';
import { bootedPlatform } from '../harness/booted.ts';
import { eventually } from '../harness/client.ts';
import { emailDoc } from '../harness/emails.ts';

const platform = bootedPlatform();

it("holds a QUEUED email's claim in memory: mid-attempt the store is unchanged, a second message sends nothing, and a cancel's SKIPPED gives way to the outcome", { timeout: 60_000 }, async () => {
  const sink = await platform.sink();
  const p = (await platform.start()).platform;
  const email = emailDoc({ _id: 'e-held', projectId: null, kind: 'system', to: 'held@customer.example', subject: 'Held', html: '<p>Held</p>', status: 'QUEUED' });
  await emails(p).insertOne(email);
  sink.holdAnswers.add(email.to);
  const message: OutboundMessage = { emailId: email._id, projectId: null };
  await p.pubsub.publish(OUTBOUND_TOPIC, message);

  // The server has the whole message and has not answered: the attempt is under way.
  await sink.waitForMailTo(email.to, 10_000);
  expect(await emails(p).findOne({ _id: email._id })).toEqual(email);
  // A second message for it (a campaign batch run again publishes its QUEUED emails again).
  await p.pubsub.publish(OUTBOUND_TOPIC, message);
  // The campaign is cancelled meanwhile: its QUEUED emails become SKIPPED (actors/campaign/actor.ts, skipUnsent).
  expect((await emails(p).updateOne({ _id: email._id, status: 'QUEUED' }, { $set: { status: 'SKIPPED', reason: 'The campaign was cancelled before this email was sent' } })).modified).toBe(1);

  sink.answerHeld(email.to);
  await eventually(async () => ((await emails(p).findOne({ _id: email._id }))?.status === 'DELIVERED' ? true : undefined), 10_000, 'the email delivered');
  await platform.untilIdle();
  const stored = (await emails(p).findOne({ _id: email._id }))!;
  expect(stored).toMatchObject({ status: 'DELIVERED', attempts: 1, reason: expect.stringMatching(/^250 /) });
  expect([stored.claimedBy, stored.claimedUntil]).toEqual([undefined, undefined]);
  expect(sink.messages.filter((m) => m.rcptTo.includes(email.to))).toHaveLength(1);
});
