// The mail loop by mail: every email leaves with its own signed Return-Path; bounce reports (DSN)
// and feedback reports (ARF) sent there by a relay reach the inbound SMTP listener and record
// `email.bounce` / `email.complaint` with the suppression; mail to a verified domain records
// `email.received` on the sender's contact and starts workflows; anything else is refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, waitForEmail } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { QUIET_MS, byMode, startInstance, type Instance } from '../harness/instance.ts';
import { startRelay, type Relay } from '../harness/relay.ts';
import { deliverMail } from '../harness/smtp-client.ts';
import { buildWorkflow, executionOf, statusIs, unique } from '../harness/workflows.ts';

const DRAIN = byMode({ embedded: 30_000, distributed: 90_000 });

interface EventRecord {
  name: string;
  data: Record<string, unknown>;
}

describe('bounces, complaints and inbound mail by SMTP', () => {
  let relay: Relay;
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    relay = await startRelay();
    instance = await startInstance({ env: { SMTP_URL: relay.url, EMAIL_RATE_PER_SECOND: '0' } });
    relay.inboundPort = instance.inboundPort;
    relay.nextHopPort = instance.smtp.port;
    project = await newProject(instance, 'Inbound');
    domain = await verifiedDomain(instance, project);
  });
  afterAll(async () => {
    await instance?.dispose();
    await relay?.close();
  });

  const address = (tag: string) => `${unique(tag)}@customer.example`;
  const send = (to: string) => project.api.post('/v1/send', { to, from: `news@${domain.domain}`, subject: unique('subject'), body: '<p>Hello</p>' });
  const relayed = (to: string) => eventually(async () => relay.messages.find((m) => m.rcptTo.includes(to)), DRAIN, `the relay to take mail for ${to}`);
  const eventsOf = async (contactId: string) => (await project.api.get(`/events/contact/${contactId}`)).body.data as EventRecord[];
  const suppression = async (email: string) => {
    const res = await project.api.get(`/suppressions/${encodeURIComponent(email)}`);
    return res.status === 200 ? res.body.data : undefined;
  };
  const contactByEmail = async (email: string) => {
    const res = await project.api.get(`/contacts?search=${encodeURIComponent(email)}`);
    return (res.body.data.contacts ?? res.body.data.items ?? res.body.data)?.find?.((c: { email: string }) => c.email === email);
  };

  it('each email leaves with its own Return-Path on the bounce domain, signed', async () => {
    const a = address('rp-a');
    const b = address('rp-b');
    await send(a);
    await send(b);
    const [first, second] = [await relayed(a), await relayed(b)];
    // The bounce MX is published (verifiedDomain publishes every record), so bounces.<domain>.
    const shape = new RegExp(`^b-[0-9a-f-]{36}-[0-9a-f]{20}@bounces\\.${domain.domain.replace(/\./g, '\\.')}$`);
    expect(first.mailFrom).toMatch(shape);
    expect(second.mailFrom).toMatch(shape);
    expect(first.mailFrom).not.toBe(second.mailFrom);
  });

  it('a relay that took the email (250) and reports a 5.x.x failure to the Return-Path: hard email.bounce with status and diagnostic, and the address suppressed', async () => {
    const to = address('dsn-hard');
    relay.undeliverable.set(to, { status: '5.1.1', diagnostic: '550 5.1.1 <' + to + '>: Recipient address rejected: User unknown' });
    const sent = await send(to);
    const contactId = sent.body.data.emails[0].contact.id as string;
    const message = await relayed(to);
    const report = await relay.waitForReport((rp) => rp === message.mailFrom);
    expect(report.answer.accepted).toEqual([message.mailFrom]);

    const entry = await eventually(() => suppression(to), DRAIN, 'the address to be suppressed');
    expect(entry).toMatchObject({ reason: 'hard_bounce', emailId: sent.body.data.emails[0].email });
    expect(entry.detail).toMatch(/5\.1\.1/);
    const bounce = await eventually(async () => (await eventsOf(contactId)).find((e) => e.name === 'email.bounce'), DRAIN, 'email.bounce');
    expect(bounce.data).toMatchObject({ emailId: sent.body.data.emails[0].email, type: 'hard', status: '5.1.1' });
    expect(bounce.data.detail).toMatch(/User unknown/);
    expect((await project.api.get(`/contacts/${contactId}`)).body.data.subscribed).toBe(false);
  });

  it('a delay warning (4.x.x) records nothing final: no bounce, no suppression', async () => {
    const to = address('dsn-delayed');
    relay.undeliverable.set(to, { status: '4.2.2', diagnostic: '452 4.2.2 Mailbox full' });
    const sent = await send(to);
    const contactId = sent.body.data.emails[0].contact.id as string;
    const message = await relayed(to);
    expect((await relay.waitForReport((rp) => rp === message.mailFrom)).answer.accepted).toEqual([message.mailFrom]);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect((await eventsOf(contactId)).map((e) => e.name)).not.toContain('email.bounce');
    expect(await suppression(to)).toBeUndefined();
  });

  it('a late report about an email that already bounced changes nothing: a hard one after the final soft bounce, a soft one after the hard bounce', async () => {
    const expired = { status: '4.4.7', diagnostic: '452 4.2.2 Mailbox full; delivery time expired' };
    const unknown = { status: '5.1.1', diagnostic: '550 5.1.1 User unknown' };
    const finalBounce = async (emailId: string) =>
      (await waitForEmail(project.api, emailId, (email) => email.status === 'BOUNCED' && email.bounce !== undefined, DRAIN, `email ${emailId} to bounce`)).bounce;
    const bouncesOf = async (contactId: string) => (await eventsOf(contactId)).filter((e) => e.name === 'email.bounce').map((e) => e.data);

    for (const [first, late] of [[expired, unknown], [unknown, expired]]) {
      const to = address(first === expired ? 'soft-then-hard' : 'hard-then-soft');
      const sent = await send(to);
      const { email: emailId, contact } = sent.body.data.emails[0] as { email: string; contact: { id: string } };
      const message = await relayed(to);
      expect((await deliverMail(instance.inboundPort, { from: '', to: [message.mailFrom] }, relayDsn(message.mailFrom, to, first))).accepted).toEqual([message.mailFrom]);
      const bounce = await finalBounce(emailId);
      await eventually(async () => ((await bouncesOf(contact.id)).length ? true : undefined), DRAIN, 'the first email.bounce');
      const suppressed = await eventually(async () => (first === unknown ? suppression(to) : null), DRAIN, 'the suppression of a hard bounce');
      const subscribed = (await project.api.get(`/contacts/${contact.id}`)).body.data.subscribed;

      expect((await deliverMail(instance.inboundPort, { from: '', to: [message.mailFrom] }, relayDsn(message.mailFrom, to, late))).accepted).toEqual([message.mailFrom]);
      await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
      expect(await bouncesOf(contact.id), to).toEqual([expect.objectContaining({ emailId, type: first === unknown ? 'hard' : 'soft', status: first.status })]);
      expect((await project.api.get(`/emails/${emailId}`)).body.data.bounce, to).toEqual(bounce);
      expect((await suppression(to)) ?? null, to).toEqual(suppressed ?? null);
      expect((await project.api.get(`/contacts/${contact.id}`)).body.data.subscribed, to).toBe(subscribed);
    }
  });

  it('a feedback report (ARF) to the Return-Path: email.complaint, and the address suppressed', async () => {
    const to = address('arf');
    const sent = await send(to);
    const contactId = sent.body.data.emails[0].contact.id as string;
    const message = await relayed(to);
    const answer = await deliverMail(instance.inboundPort, { from: '', to: [message.mailFrom] }, arf(message.mailFrom, to, message.raw));
    expect(answer.accepted).toEqual([message.mailFrom]);
    expect(await eventually(() => suppression(to), DRAIN, 'the address to be suppressed')).toMatchObject({ reason: 'complaint' });
    // The list first, then the event (results.ts): wait for the event too.
    await eventually(async () => (await eventsOf(contactId)).find((e) => e.name === 'email.complaint'), DRAIN, 'email.complaint');
  });

  it('a feedback report to the feedback-loop address names the email by the Message-ID it quotes', async () => {
    const to = address('fbl');
    const sent = await send(to);
    const message = await relayed(to);
    const fbl = `fbl@bounces.${domain.domain}`;
    const answer = await deliverMail(instance.inboundPort, { from: '', to: [fbl] }, arf(fbl, to, message.raw));
    expect(answer.accepted).toEqual([fbl]);
    expect(await eventually(() => suppression(to), DRAIN, 'the address to be suppressed')).toMatchObject({
      reason: 'complaint',
      emailId: sent.body.data.emails[0].email,
    });
  });

  it('a forged Return-Path (another email id, or a changed signature) is refused at RCPT and changes nothing', async () => {
    const to = address('forged');
    const sent = await send(to);
    const contactId = sent.body.data.emails[0].contact.id as string;
    const message = await relayed(to);
    const [local, host] = message.mailFrom.split('@');
    const flipped = local.slice(0, -1) + (local.endsWith('0') ? '1' : '0');
    for (const forged of [`${flipped}@${host}`, `b-${'0'.repeat(8)}-0000-7000-8000-${'0'.repeat(12)}-${local.slice(-20)}@${host}`]) {
      const dsn = relayDsn(forged, to);
      const answer = await deliverMail(instance.inboundPort, { from: '', to: [forged] }, dsn);
      expect(answer.responseCode).toBe(550);
      expect(answer.accepted).toEqual([]);
    }
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect((await eventsOf(contactId)).map((e) => e.name)).not.toContain('email.bounce');
    expect(await suppression(to)).toBeUndefined();
  });

  it('mail to an address at a verified domain records email.received on the sender, a new contact unsubscribed, and starts a workflow', async () => {
    const wf = await buildWorkflow(project, { eventName: 'email.received', steps: [{ name: 'wait', type: 'DELAY', config: { amount: 1, unit: 'hours' } }] });
    const from = address('writer');
    const to = `support@${domain.domain}`;
    const raw = [
      `From: A Writer <${from}>`,
      `To: Support <${to}>`,
      'Subject: Where is my order?',
      'Message-ID: <order-question-1@customer.example>',
      'MIME-Version: 1.0',
      'Content-Type: multipart/mixed; boundary="mixed-1"',
      '',
      '--mixed-1',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Hello, my order has not arrived.',
      '--mixed-1',
      'Content-Type: application/pdf; name="invoice.pdf"',
      'Content-Disposition: attachment; filename="invoice.pdf"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('%PDF-1.4 invoice').toString('base64'),
      '--mixed-1--',
      '',
    ].join('\r\n');
    const answer = await deliverMail(instance.inboundPort, { from, to: [to] }, raw);
    expect(answer.accepted).toEqual([to]);

    const contact = await eventually(() => contactByEmail(from), DRAIN, 'the sender to become a contact');
    expect(contact.subscribed).toBe(false);
    const received = await eventually(async () => (await eventsOf(contact.id)).find((e) => e.name === 'email.received'), DRAIN, 'email.received');
    expect(received.data).toEqual({
      from,
      to,
      subject: 'Where is my order?',
      text: expect.stringContaining('my order has not arrived'),
      messageId: '<order-question-1@customer.example>',
      attachments: [{ filename: 'invoice.pdf', contentType: 'application/pdf', size: 16 }],
    });
    await executionOf(project, wf.id, contact.id, statusIs('WAITING'), DRAIN, 'the email.received workflow to start');

    // The same message again (a sender retrying after a lost reply) is recorded once.
    expect((await deliverMail(instance.inboundPort, { from, to: [to] }, raw)).accepted).toEqual([to]);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect((await eventsOf(contact.id)).filter((e) => e.name === 'email.received')).toHaveLength(1);
  });

  it('mail with a null sender (a bounce of someone else\'s mail) to a mailbox is taken and records nothing', async () => {
    const from = address('daemon');
    const to = `info@${domain.domain}`;
    const answer = await deliverMail(instance.inboundPort, { from: '', to: [to] }, `From: ${from}\r\nTo: ${to}\r\nSubject: Undeliverable\r\n\r\nSorry.\r\n`);
    expect(answer.accepted).toEqual([to]);
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    expect(await contactByEmail(from)).toBeUndefined();
  });

  it('mail for a domain nobody verified is refused at RCPT with a 550', async () => {
    const answer = await deliverMail(instance.inboundPort, { from: address('spammer'), to: [`someone@${unique('nobody')}.example`] }, 'Subject: hi\r\n\r\nhello\r\n');
    expect(answer.responseCode).toBe(550);
    expect(answer.accepted).toEqual([]);
  });
});

function arf(returnPath: string, recipient: string, original: string): string {
  const boundary = 'arf-boundary-1';
  return [
    'From: <staff@feedback.example>',
    `To: <${returnPath}>`,
    'Subject: FW: complaint',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=feedback-report; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain',
    '',
    'This is an email abuse report.',
    `--${boundary}`,
    'Content-Type: message/feedback-report',
    '',
    'Feedback-Type: abuse',
    'User-Agent: FeedbackLoop/1.0',
    'Version: 1',
    `Original-Mail-From: <${returnPath}>`,
    `Original-Rcpt-To: <${recipient}>`,
    '',
    `--${boundary}`,
    'Content-Type: message/rfc822',
    '',
    original.replace(/\r?\n$/, ''),
    `--${boundary}--`,
    '',
  ].join('\r\n');
}

function relayDsn(returnPath: string, recipient: string, failure = { status: '5.1.1', diagnostic: '550 5.1.1 User unknown' }): string {
  return [
    `To: ${returnPath}`,
    'Subject: Undelivered Mail Returned to Sender',
    'MIME-Version: 1.0',
    'Content-Type: multipart/report; report-type=delivery-status; boundary="b1"',
    '',
    '--b1',
    'Content-Type: message/delivery-status',
    '',
    'Reporting-MTA: dns; relay.test',
    '',
    `Final-Recipient: rfc822; ${recipient}`,
    'Action: failed',
    `Status: ${failure.status}`,
    `Diagnostic-Code: smtp; ${failure.diagnostic}`,
    '',
    '--b1--',
    '',
  ].join('\r\n');
}
