// A mailer finishes an email (BOUNCED, FAILED, or DELIVERED from its commit log) before it publishes
// the outcome; one killed in between leaves the email final, its outcome unpublished and its
// outbound message unacknowledged. The message then comes again: here it is published again, on
// the whole embedded platform (boot), so the contact records it and a bounce suppresses the address
// (and the request's attachments go, as after the finish).
import { expect, it } from 'vitest';
import { contacts } from '../../domain/contacts/collection.ts';
import { resolveContact } from '../../domain/contacts/service.ts';
import { events } from '../../domain/events/collection.ts';
import { emailAttachments, emails, OUTBOUND_TOPIC, type EmailDoc, type OutboundMessage } from '../../domain/mail/outbound.ts';
import { suppressionId, suppressions } from '../../domain/suppressions/collection.ts';
import { bootedPlatform } from '../harness/booted.ts';
import { eventually } from '../harness/client.ts';
import { emailDoc } from '../harness/emails.ts';

const platform = bootedPlatform();

it('a message for an email finished before its outcome was published publishes the outcome; one for an email never sent publishes none', async () => {
  const p = (await platform.start()).platform;

  const final = async (name: string, fields: Partial<EmailDoc>) => {
    const to = `${name}@customer.example`;
    const { id: contactId } = await resolveContact(p, 'p1', to, true);
    const email = emailDoc({ _id: `e-${name}`, to, contactId, kind: 'marketing', attempts: 1, ...fields });
    await emails(p).insertOne(email);
    return email;
  };
  const response = '550 5.1.1 <bounced@customer.example>: no such user';
  const bounced = await final('bounced', { status: 'BOUNCED', reason: response, response, bounce: { type: 'hard', status: '5.1.1', diagnostic: response } });
  const delivered = await final('delivered', { status: 'DELIVERED', response: '250 2.0.0 queued', deliveredAt: '2026-01-01T00:00:05.000Z' });
  // The last email of a request with attachments: they were to go after its finish.
  await emailAttachments(p).insertOne({ _id: 'att-refused', projectId: 'p1', items: [{ filename: 'a.txt', contentType: 'text/plain', content: 'YQ==' }] });
  const refused = await final('refused', { status: 'FAILED', response: '554 5.7.1 message refused', reason: 'The relay refused the message: 554 5.7.1 message refused', attachmentsId: 'att-refused' });
  const skipped = await final('skipped', { status: 'SKIPPED', reason: 'The campaign was cancelled' });

  // The messages the killed mailers never acknowledged, delivered again.
  await p.pubsub.publishMany<OutboundMessage>(OUTBOUND_TOPIC, [bounced, delivered, refused, skipped].map((e) => ({ emailId: e._id, projectId: 'p1' })));

  // The contact's events of this email (its others, such as its creation, are not the mailer's).
  const eventIds = async (email: EmailDoc) =>
    (await events(p.store).find({ contactId: email.contactId })).map((e) => e._id).filter((id) => id.startsWith(`${email._id}:`)).sort();
  await eventually(async () => ((await eventIds(bounced)).includes(`${bounced._id}:email.bounce`) ? true : undefined), 10_000, 'the bounce recorded');
  expect(await eventIds(bounced)).toEqual([`${bounced._id}:email.bounce`, `${bounced._id}:email.sent`]);
  // Its consequences: the address suppressed, the contact unsubscribed.
  await eventually(async () => (await contacts(p.store).findOne({ _id: bounced.contactId! }))?.subscribed === false || undefined, 10_000, 'the contact unsubscribed');
  expect((await suppressions(p.store).findOne({ _id: suppressionId('p1', bounced.to) }))?.reason).toBe('hard_bounce');
  await eventually(async () => ((await eventIds(delivered)).includes(`${delivered._id}:email.delivery`) ? true : undefined), 10_000, 'the delivery recorded');
  expect(await eventIds(delivered)).toEqual([`${delivered._id}:email.delivery`, `${delivered._id}:email.sent`]);
  await eventually(async () => ((await eventIds(refused)).length > 0 ? true : undefined), 10_000, 'the refused email recorded as sent');
  expect(await eventIds(refused)).toEqual([`${refused._id}:email.sent`]);
  await eventually(async () => ((await emailAttachments(p).findOne({ _id: 'att-refused' })) === null ? true : undefined), 10_000, 'the attachments dropped');

  // Idle: no message waiting or being handled; the email the gate or a cancel stopped has no outcome.
  await platform.untilIdle();
  expect(await eventIds(skipped)).toEqual([]);
  // The emails stay as they were finished.
  expect((await emails(p).find({ _id: { $in: [bounced._id, delivered._id, refused._id, skipped._id] } })).map((e) => e.status).sort()).toEqual(['BOUNCED', 'DELIVERED', 'FAILED', 'SKIPPED']);
});

// A relay's refusal (FAILED) has email.sent as its only event. The first attempt records it
// alone when a retry is ahead; a mailer that died before publishing it left a later attempt to.
it('an email the relay refuses on a later attempt records email.sent, the one an earlier attempt may have lost', async () => {
  const sink = await platform.sink();
  const p = (await platform.start()).platform;
  const to = 'refused@customer.example';
  const { id: contactId } = await resolveContact(p, 'p1', to, true);
  // A system email has no domain or gate to pass; its contact is what records the event.
  const email = emailDoc({ _id: 'e-refused-later', projectId: 'p1', kind: 'system', to, contactId, subject: 'Hi', html: '<p>Hi</p>', attempts: 1, reason: 'Retrying: connection refused' });
  sink.refuseRecipients.set(to, '554 5.7.1 <relay>: Relay access denied');
  await emails(p).insertOne(email);
  await p.pubsub.publish<OutboundMessage>(OUTBOUND_TOPIC, { emailId: email._id, projectId: null });

  await eventually(async () => ((await emails(p).findOne({ _id: email._id }))?.status === 'FAILED' ? true : undefined), 10_000, 'the email refused');
  await eventually(async () => ((await events(p.store).findOne({ _id: `${email._id}:email.sent` })) ? true : undefined), 10_000, 'email.sent recorded');
  expect((await emails(p).findOne({ _id: email._id }))?.attempts).toBe(2);
});
