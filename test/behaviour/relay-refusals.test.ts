// A relay's 5xx that is not about the recipient's address: the message too big, the sender
// refused, relaying denied, the message refused as spam, a refused login. None of them may
// suppress the address or unsubscribe the contact (a hard bounce does both): the email FAILED with
// the relay's words, and a login the relay refuses holds the mail until it works.
// The first part goes through the mailer's own SMTP client (a plain relay that pipelines), the
// login through nodemailer (a relay with credentials).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { emailFinished, eventually, waitForEmail, type EmailRecord, type EventRecord } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';
import { unique } from '../harness/workflows.ts';

const DRAIN = byMode({ embedded: 20_000, distributed: 90_000 });

interface Setup {
  instance: Instance;
  project: ProjectAccess;
  domain: Domain;
}

async function setUp(login?: string): Promise<Setup> {
  // Signing up sends mail through the relay: the login is refused only once the tests set it.
  const instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0' }, ...(login ? { smtpLogin: login } : {}) });
  const project = await newProject(instance, 'Relay refusals');
  return { instance, project, domain: await verifiedDomain(instance, project) };
}

const address = (tag: string) => `${unique(tag)}@customer.example`;

async function send(s: Setup, to: string, from = `desk@${s.domain.domain}`) {
  // subscribed: true for the contact the call creates, so that an unsubscribe would show.
  const res = await s.project.api.post('/v1/send', { to, from, subject: 'Your invoice', body: '<p>Attached.</p>', subscribed: true });
  expect(res.status).toBe(200);
  return res.body.data.emails[0] as { email: string; contact: { id: string } };
}

/** The email once `done` holds for it (GET /emails/:id). */
const emailWhen = (s: Setup, id: string, done: (email: EmailRecord) => boolean, what: string) => waitForEmail(s.project.api, id, done, DRAIN, what);

const names = (events: EventRecord[]) => events.map((e) => e.name);

/** Out of the mailer's hands: email.sent is recorded after the final status is written. */
const settled = (e: EmailRecord) => emailFinished(e) && names(e.events).includes('email.sent');

/** The recipient is as before the email: subscribed, and not on the suppression list. */
async function untouched(s: Setup, to: string, contactId: string): Promise<void> {
  expect((await s.project.api.get(`/contacts/${contactId}`)).body.data.subscribed).toBe(true);
  expect((await s.project.api.get(`/suppressions/${encodeURIComponent(to)}`)).status).toBe(404);
}

describe('answers about the message, not the address', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp();
  });
  afterAll(() => s.instance.dispose());

  it('a message too big for the relay (552 5.3.4 after the message) is FAILED with the relay\'s words: no bounce, nothing suppressed', async () => {
    const to = address('big');
    s.instance.smtp.refuseMessages.set(to, '552 5.3.4 Message size exceeds fixed limit');
    const sent = await send(s, to);
    const email = await emailWhen(s, sent.email, settled, 'the refusal');
    expect(email).toMatchObject({ status: 'FAILED', reason: expect.stringContaining('5.3.4 Message size exceeds fixed limit'), response: expect.stringMatching(/^552 5\.3\.4/) });
    expect(email.bounce).toBeUndefined();
    expect(names(email.events)).toEqual(['email.sent']);
    await untouched(s, to, sent.contact.id);
    expect(s.instance.smtp.messages.some((m) => m.rcptTo.includes(to))).toBe(false);
  });

  it('a sender the relay refuses (5xx to MAIL FROM) fails the email, not the recipient', async () => {
    const to = address('sender');
    await send(s, to);
    // MAIL FROM is the email's Return-Path, on the domain every email of this sender uses.
    const senderDomain = (await s.instance.smtp.waitForMailTo(to, DRAIN)).mailFrom.split('@')[1];
    s.instance.smtp.refuseSenders.set(senderDomain, '550 5.7.1 Sender address not allowed');
    const sent = await send(s, to);
    const email = await emailWhen(s, sent.email, settled, 'the refusal');
    s.instance.smtp.refuseSenders.delete(senderDomain);
    expect(email).toMatchObject({ status: 'FAILED', reason: expect.stringContaining('Sender address not allowed'), response: expect.stringMatching(/^550 5\.7\.1/) });
    expect(email.bounce).toBeUndefined();
    await untouched(s, to, sent.contact.id);
    // Once the relay takes the sender again, the same recipient gets the next email.
    const next = await send(s, to);
    await emailWhen(s, next.email, (e) => e.status === 'DELIVERED', 'the next email delivered');
  });

  it('a message the relay refuses by policy (554 5.7.1 at RCPT TO: relaying denied, or as spam after the message) is FAILED, not a bounce', async () => {
    const denied = address('denied');
    s.instance.smtp.refuseRecipients.set(denied, '554 5.7.1 <relay>: Relay access denied');
    const spam = address('spam');
    s.instance.smtp.refuseMessages.set(spam, '554 5.7.1 Message rejected as spam');
    for (const [to, words] of [[denied, 'Relay access denied'], [spam, 'Message rejected as spam']]) {
      const sent = await send(s, to);
      const email = await emailWhen(s, sent.email, settled, 'the refusal');
      expect(email).toMatchObject({ status: 'FAILED', reason: expect.stringContaining(words), response: expect.stringMatching(/^554 5\.7\.1/) });
      expect(email.bounce).toBeUndefined();
      expect(names(email.events)).toEqual(['email.sent']);
      await untouched(s, to, sent.contact.id);
    }
  });

  it('an unknown mailbox (550 5.1.1) is still a hard bounce: suppressed and unsubscribed', async () => {
    const to = address('gone');
    s.instance.smtp.rejectRecipients.add(to);
    const sent = await send(s, to);
    const email = await emailWhen(s, sent.email, (e) => names(e.events).includes('email.bounce'), 'the bounce');
    expect(email).toMatchObject({ status: 'BOUNCED', bounce: { type: 'hard' } });
    expect((await s.project.api.get(`/suppressions/${encodeURIComponent(to)}`)).status).toBe(200);
    await eventually(async () => ((await s.project.api.get(`/contacts/${sent.contact.id}`)).body.data.subscribed === false ? true : undefined), DRAIN, 'the unsubscribe');
  });
});

describe('a login the relay refuses', () => {
  let s: Setup;
  beforeAll(async () => {
    s = await setUp('mailroom:secret');
  });
  afterAll(() => s.instance.dispose());

  it('(535) holds the email as an outage, retried: no bounce, nobody suppressed; once the login works it is delivered', async () => {
    s.instance.smtp.refuseLogins = true;
    // Connections logged in before are dropped: the next one must log in.
    s.instance.smtp.dropConnections();
    const to = address('login');
    const sent = await send(s, to);
    const email = await emailWhen(s, sent.email, (e) => /^Retrying: .*535/.test(e.reason ?? ''), 'the retry after the 535');
    expect(email.status).toBe('SENDING');
    expect(email.bounce).toBeUndefined();
    expect(names(email.events)).not.toContain('email.bounce');
    await untouched(s, to, sent.contact.id);
    s.instance.smtp.refuseLogins = false;
    await emailWhen(s, sent.email, (e) => e.status === 'DELIVERED', 'the delivery once the login works');
  });
});
