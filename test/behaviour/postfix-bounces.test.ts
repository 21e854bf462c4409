// A real relay in the loop: the platform's SMTP_URL is a private Postfix from Debian, which, as
// every relay does, answers 250 to each message and reports what happens next by mail to the
// email's Return-Path. The recipients' server (a local smtp-server) answers 550 5.1.1 for an
// unknown mailbox and 452 4.2.2 for a full one; Postfix's own DSNs reach the inbound listener
// and become a hard email.bounce with the suppression, or, once Postfix gives up on the full
// mailbox, a soft one.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../scripts/stack/processes.ts';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, sleep, waitForEmail, type EventRecord } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { QUIET_MS, byMode, startInstance, type Instance } from '../harness/instance.ts';
import { startPostfix, type Postfix } from '../harness/postfix.ts';
import { unique } from '../harness/workflows.ts';

/** Seconds Postfix keeps retrying a 4xx before it returns the message (its delay warning comes at a third). */
const QUEUE_LIFETIME = 6;
const DRAIN = byMode({ embedded: 20_000, distributed: 60_000 });
const TIMEOUT = byMode({ embedded: 45_000, distributed: 150_000 });

describe('bounces from a real Postfix relay', () => {
  let postfix: Postfix;
  let mailbox: Mailbox;
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    mailbox = await startMailbox();
    const inboundPort = await freePort();
    // Recipients at customer.example go to their server; bounces.<domain>.example.com is the
    // bounce domain of our Return-Paths, whose MX is the inbound listener.
    postfix = await startPostfix({ queueLifetimeSeconds: QUEUE_LIFETIME, routes: { 'customer.example': mailbox.port, '.example.com': inboundPort } });
    instance = await startInstance({ env: { SMTP_URL: postfix.url, INBOUND_SMTP_PORT: String(inboundPort), EMAIL_RATE_PER_SECOND: '0' } });
    // Account mail (the owner's verification, to example.com) goes on to the harness's sink.
    await postfix.route({ 'customer.example': mailbox.port, '.example.com': inboundPort, 'example.com': instance.smtp.port });
    project = await newProject(instance, 'Postfix relay');
    domain = await verifiedDomain(instance, project);
  });
  afterAll(async () => {
    await instance?.dispose();
    await postfix?.stop();
    await mailbox?.close();
  });

  const address = (tag: string) => `${unique(tag)}@customer.example`;
  const send = (to: string) => project.api.post('/v1/send', { to, from: `news@${domain.domain}`, subject: unique('subject'), body: '<p>Hello</p>', subscribed: true });
  const bouncedEmail = (id: string) =>
    waitForEmail(project.api, id, (email) => email.status === 'BOUNCED', DRAIN, `email ${id} to be BOUNCED by Postfix's report`).catch((err: Error) => {
      throw new Error(`${err.message}\nPostfix's log:\n${postfix.log()}`);
    });
  const contactEvents = async (contactId: string) => (await project.api.get(`/events/contact/${contactId}`)).body.data as EventRecord[];
  const suppression = async (email: string) => {
    const res = await project.api.get(`/suppressions/${encodeURIComponent(email)}`);
    return res.status === 200 ? res.body.data : undefined;
  };

  it('Postfix takes the email (250), the mailbox is unknown (550 5.1.1): its DSN records a hard email.bounce with status and diagnostic, the address is suppressed, and the next send answers SUPPRESSED', { timeout: TIMEOUT }, async () => {
    const to = address('unknown');
    mailbox.unknown.add(to);
    const sent = await send(to);
    expect(sent.status).toBe(200);
    const { email: emailId, contact } = sent.body.data.emails[0] as { email: string; contact: { id: string } };

    const email = await bouncedEmail(emailId);
    expect(email.response, 'the relay took it').toMatch(/^250 .*queued as/);
    expect(email.bounce).toEqual({ type: 'hard', status: '5.1.1', diagnostic: expect.stringMatching(/^550 5\.1\.1 <.+>: Recipient address rejected: User unknown/) });
    expect(postfix.log()).toMatch(new RegExp(`${emailId.slice(0, 8)}[^\\n]*status=sent \\(250`));

    const events = await eventually(async () => {
      const list = await contactEvents(contact.id);
      return list.some((e) => e.name === 'email.bounce') ? list : undefined;
    }, DRAIN, 'the email.bounce event');
    expect(events.filter((e) => e.name === 'email.bounce').map((e) => e.data)).toEqual([
      expect.objectContaining({ emailId, type: 'hard', status: '5.1.1', detail: expect.stringMatching(/User unknown/) }),
    ]);
    expect(events.map((e) => e.name)).toContain('email.delivery');
    expect(await eventually(() => suppression(to), DRAIN, 'the address to be suppressed')).toMatchObject({ reason: 'hard_bounce', emailId });
    // The unsubscription is the result's last write, after its event: waited for, not read once.
    const unsubscribed = async () => ((await project.api.get(`/contacts/${contact.id}`)).body.data.subscribed === false ? true : undefined);
    expect(await eventually(unsubscribed, DRAIN, 'the contact to be unsubscribed')).toBe(true);

    const again = await send(to);
    expect(again.status).toBe(200);
    expect(again.body.data.emails[0].status).toBe('SUPPRESSED');
    expect(mailbox.received(to)).toEqual([]);
  });

  it('a full mailbox (452 4.2.2): Postfix\'s delay warning records nothing final; when Postfix gives up, one soft email.bounce, no suppression', { timeout: TIMEOUT }, async () => {
    const to = address('full');
    mailbox.full.add(to);
    const started = Date.now();
    const sent = await send(to);
    const { email: emailId, contact } = sent.body.data.emails[0] as { email: string; contact: { id: string } };

    const email = await bouncedEmail(emailId);
    expect(Date.now() - started, 'not before Postfix gave up').toBeGreaterThanOrEqual(QUEUE_LIFETIME * 1000 * 0.9);
    expect(email.bounce).toEqual({ type: 'soft', status: '4.2.2', diagnostic: expect.stringMatching(/^452 4\.2\.2 <.+>: Mailbox full/) });
    // Both reports went to the Return-Path and our listener took them.
    expect(postfix.log()).toMatch(/sender delay notification/);
    expect(postfix.log()).toMatch(/sender non-delivery notification/);
    expect(mailbox.tries(to)).toBeGreaterThanOrEqual(2);

    await sleep(QUIET_MS);
    const bounces = (await contactEvents(contact.id)).filter((e) => e.name === 'email.bounce');
    expect(bounces.map((e) => e.data)).toEqual([expect.objectContaining({ emailId, type: 'soft', status: '4.2.2' })]);
    expect(await suppression(to)).toBeUndefined();
    expect((await project.api.get(`/contacts/${contact.id}`)).body.data.subscribed).toBe(true);
  });
});

interface Mailbox {
  port: number;
  /** Answered `550 5.1.1 … User unknown` at RCPT. */
  unknown: Set<string>;
  /** Answered `452 4.2.2 … Mailbox full` at RCPT, every time. */
  full: Set<string>;
  received(to: string): string[];
  tries(to: string): number;
  close(): Promise<void>;
}

/** The recipients' mail server: a real smtp-server that Postfix's transport map points at. */
async function startMailbox(): Promise<Mailbox> {
  const unknown = new Set<string>();
  const full = new Set<string>();
  const messages: { to: string[]; raw: string }[] = [];
  const attempts = new Map<string, number>();
  const refuse = (code: number, text: string) => Object.assign(new Error(text), { responseCode: code });
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo({ address }, _session, callback) {
      const to = address.toLowerCase();
      attempts.set(to, (attempts.get(to) ?? 0) + 1);
      if (unknown.has(to)) return callback(refuse(550, `5.1.1 <${to}>: Recipient address rejected: User unknown`));
      if (full.has(to)) return callback(refuse(452, `4.2.2 <${to}>: Mailbox full`));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        messages.push({ to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()), raw: Buffer.concat(chunks).toString() });
        callback();
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.server.address() as AddressInfo).port,
    unknown,
    full,
    received: (to) => messages.filter((m) => m.to.includes(to)).map((m) => m.raw),
    tries: (to) => attempts.get(to) ?? 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
