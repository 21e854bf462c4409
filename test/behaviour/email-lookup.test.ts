// GET /emails/:id: one email by the id /v1/send returns, with its status, the relay's answer, the
// bounce, and the events about it; another project's email is a 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, waitForDelivered, type EventRecord } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';
import { unique } from '../harness/workflows.ts';

const DRAIN = byMode({ embedded: 20_000, distributed: 90_000 });

describe('GET /emails/:id', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0' } });
    project = await newProject(instance, 'Email lookup');
    domain = await verifiedDomain(instance, project);
  });
  afterAll(() => instance.dispose());

  const address = (tag: string) => `${unique(tag)}@customer.example`;
  const send = async (to: string, extra: Record<string, unknown> = {}) => {
    const res = await project.api.post('/v1/send', { to, from: `desk@${domain.domain}`, subject: 'Order {{order}}', body: '<p>Hello</p>', data: { order: 'A-7' }, ...extra });
    expect(res.status).toBe(200);
    return res.body.data.emails[0] as { email: string; contact: { id: string }; status?: string };
  };
  const lookUp = (id: string) => project.api.get(`/emails/${id}`);
  const names = (events: EventRecord[]) => events.map((e) => e.name);
  // The open and the complaint below come once the mailer is done with the email (waitForDelivered).
  const delivered = (id: string) => waitForDelivered(project.api, id, DRAIN);

  it('a delivered email: DELIVERED, the relay\'s 250, and its events (email.sent, email.delivery, email.open) oldest first', async () => {
    const to = address('delivered');
    const sent = await send(to);
    const mail = await instance.smtp.waitForMailTo(to, DRAIN);
    const pixel = /src="([^"]*\/t\/open\/[^"]+)"/.exec(mail.parsed.html ?? '')?.[1];
    expect(pixel).toBeDefined();
    // Events are listed in the order they were recorded: the open after the delivery's.
    await delivered(sent.email);
    expect((await fetch(pixel!.replace(/&amp;/g, '&'))).status).toBe(200);

    const email = await eventually(async () => {
      const res = await lookUp(sent.email);
      return res.status === 200 && names(res.body.data.events).includes('email.open') && names(res.body.data.events).includes('email.delivery') ? res.body.data : undefined;
    }, DRAIN, 'the email with its open');
    expect(email).toMatchObject({ id: sent.email, to, from: `desk@${domain.domain}`, subject: 'Order A-7', type: 'transactional', status: 'DELIVERED', response: expect.stringMatching(/^250/) });
    expect(email.bounce).toBeUndefined();
    expect(names(email.events)).toEqual(['email.sent', 'email.delivery', 'email.open']);
    for (const event of email.events as EventRecord[]) expect(event).toMatchObject({ contactId: sent.contact.id, data: expect.objectContaining({ emailId: sent.email }) });
  });

  it('a bounced email: BOUNCED, with the hard bounce\'s status and diagnostic and its email.bounce event; only its own events', async () => {
    const to = address('gone');
    await send(to); // an earlier email to the same contact, whose events must not show below
    await instance.smtp.waitForMailTo(to, DRAIN);
    instance.smtp.rejectRecipients.add(to);
    const sent = await send(to);
    const email = await eventually(async () => {
      const res = await lookUp(sent.email);
      return res.status === 200 && res.body.data.bounce && names(res.body.data.events).includes('email.bounce') ? res.body.data : undefined;
    }, DRAIN, 'the bounce');
    instance.smtp.rejectRecipients.delete(to);
    expect(email).toMatchObject({ status: 'BOUNCED', bounce: { type: 'hard', status: '5.1.1', diagnostic: expect.stringMatching(/^550 /) }, response: expect.stringMatching(/^550 /) });
    expect(names(email.events)).toEqual(['email.sent', 'email.bounce']);
    expect(email.events.every((e: EventRecord) => e.data.emailId === sent.email)).toBe(true);
  });

  it('a complained-about email: the complaint, and its email.complaint event', async () => {
    const to = address('complains');
    const sent = await send(to);
    await delivered(sent.email);
    expect((await project.api.post('/v1/complaints', { emailId: sent.email })).status).toBe(202);
    const email = await eventually(async () => {
      const res = await lookUp(sent.email);
      return res.status === 200 && res.body.data.complaint && names(res.body.data.events).includes('email.complaint') ? res.body.data : undefined;
    }, DRAIN, 'the complaint');
    expect(email.complaint).toEqual({ at: expect.any(String), detail: null });
    expect(email.status).toBe('DELIVERED');
  });

  it('a suppressed email: SUPPRESSED with the reason, no relay answer and no events', async () => {
    const to = address('suppressed');
    expect((await project.api.post('/suppressions', { email: to })).status).toBe(201);
    const sent = await send(to);
    expect(sent.status).toBe('SUPPRESSED');
    const res = await lookUp(sent.email);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ id: sent.email, to, status: 'SUPPRESSED', reason: expect.any(String), events: [] });
    expect(res.body.data.response).toBeUndefined();
    expect(res.body.data.bounce).toBeUndefined();
  });

  it("another project's email, and an unknown id, are 404 NOT_FOUND", async () => {
    const sent = await send(address('mine'));
    const other = await newProject(instance, 'Someone else');
    const theirs = await other.api.get(`/emails/${sent.email}`);
    expect(theirs.status).toBe(404);
    expect(theirs.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
    expect((await lookUp('no-such-email')).status).toBe(404);
  });

  it('takes the secret key only: the public key is 403', async () => {
    const sent = await send(address('keys'));
    const res = await fetch(`${instance.url}/emails/${sent.email}`, { headers: { authorization: `Bearer ${project.publicKey}` } });
    expect(res.status).toBe(403);
  });
});
