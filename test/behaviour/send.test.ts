import { Resolver } from 'node:dns/promises';
import { authenticate } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, waitForDelivered } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';
import type { ReceivedMessage } from '../harness/smtp-sink.ts';

const DRAIN = byMode({ embedded: 20_000, distributed: 90_000 });

describe('POST /v1/send', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0' } });
    project = await newProject(instance, 'Sender & <Co>');
    domain = await verifiedDomain(instance, project);
  });
  afterAll(() => instance.dispose());

  let n = 0;
  const address = (tag: string) => `${tag}-${++n}@customer.example`;
  const received = (to: string) => instance.smtp.waitForMailTo(to, 20_000);
  const header = (m: ReceivedMessage, name: string) => m.parsed.headers.find((h) => h.key === name.toLowerCase())?.value;
  const eventNames = async (contactId: string) =>
    ((await project.api.get(`/events/contact/${contactId}`)).body.data as { name: string }[]).map((e) => e.name);

  it('delivers a transactional email from the verified domain, DKIM-signed with its published key', async () => {
    const to = address('ann');
    const res = await project.api.post('/v1/send', {
      to: { name: 'Ann Lee', email: to },
      from: { name: 'Shop', email: `hello@${domain.domain}` },
      reply: `support@${domain.domain}`,
      subject: 'Your order {{order}}',
      body: '<style>p{color:red}</style><p>Hi {{name ?? friend}}, order {{order}} is on its way. <a href="https://shop.example/track?id=1&amp;x=2">Track</a></p>',
      data: { order: 'A-17', name: { value: '<b>Ann</b>', persistent: false } },
      headers: { 'X-Campaign': 'orders' },
    });
    expect(res.status).toBe(200);
    expect(res.body.data.emails).toEqual([{ contact: { id: expect.any(String), email: to }, email: expect.any(String), status: 'QUEUED' }]);

    const mail = await received(to);
    expect(mail.parsed.subject).toBe('Your order A-17');
    expect(mail.parsed.from).toMatchObject({ name: 'Shop', address: `hello@${domain.domain}` });
    expect(mail.parsed.to?.[0]).toMatchObject({ name: 'Ann Lee', address: to });
    expect(mail.parsed.replyTo?.[0]?.address).toBe(`support@${domain.domain}`);
    expect(header(mail, 'x-campaign')).toBe('orders');
    expect(mail.parsed.messageId).toBe(`<${res.body.data.emails[0].email}@${domain.domain}>`);
    // Values are escaped into the HTML; the template's own markup and CSS (inlined) stay.
    expect(mail.parsed.html).toContain('Hi &lt;b&gt;Ann&lt;/b&gt;');
    expect(mail.parsed.html).toMatch(/<p style="color: ?red;?">/);
    // Links go through signed click URLs; the original is in the `u` parameter.
    expect(mail.parsed.html).toContain(`${instance.url}/t/click/`);
    expect(mail.parsed.html).toContain(encodeURIComponent('https://shop.example/track?id=1&x=2'));
    expect(mail.parsed.html).toContain(`${instance.url}/t/open/`);
    expect(mail.parsed.text).toContain('order A-17 is on its way');
    // Transactional mail carries no list-unsubscribe headers.
    expect(header(mail, 'list-unsubscribe')).toBeUndefined();

    const resolver = new Resolver();
    resolver.setServers([instance.dns.address]);
    const auth = await authenticate(mail.raw, {
      resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT'),
      sender: `hello@${domain.domain}`,
      ip: '127.0.0.1',
      helo: 'localhost',
      mta: 'sink.test',
    });
    const dkim = auth.dkim.results[0];
    expect(dkim.signingDomain).toBe(domain.domain);
    expect(dkim.status.result).toBe('pass');

    // Non-persistent values are never stored; persistent ones are.
    const contact = await project.api.get(`/contacts/${res.body.data.emails[0].contact.id}`);
    expect(contact.body.data.data).toEqual({ order: 'A-17' });
    expect(contact.body.data.subscribed).toBe(false);
    await eventually(async () => {
      const names = await eventNames(contact.body.data.id);
      return names.includes('email.delivery') && names.includes('email.sent') ? names : undefined;
    });
  });

  it('sends each recipient their own message', async () => {
    const [a, b] = [address('a'), address('b')];
    const res = await project.api.post('/v1/send', { to: [a, { email: b }, a], from: `news@${domain.domain}`, subject: 'Hi', body: '<p>{{email}}</p>' });
    expect(res.status).toBe(200);
    expect(res.body.data.emails.map((e: { contact: { email: string } }) => e.contact.email)).toEqual([a, b]);
    const [ma, mb] = await Promise.all([received(a), received(b)]);
    expect(ma.rcptTo).toEqual([a]);
    expect(mb.rcptTo).toEqual([b]);
    expect(ma.parsed.html).toContain(a);
    expect(mb.parsed.html).not.toContain(a);
  });

  it('attaches files, decoded', async () => {
    const to = address('att');
    const pdf = Buffer.from('%PDF-1.4 not really');
    const res = await project.api.post('/v1/send', {
      to, from: `billing@${domain.domain}`, subject: 'Invoice', body: '<p>Attached.</p>',
      attachments: [{ filename: 'invoice.pdf', content: pdf.toString('base64'), contentType: 'application/pdf' }],
    });
    expect(res.status).toBe(200);
    const mail = await received(to);
    expect(mail.parsed.attachments).toHaveLength(1);
    expect(mail.parsed.attachments[0]).toMatchObject({ filename: 'invoice.pdf', mimeType: 'application/pdf' });
    expect(Buffer.from(mail.parsed.attachments[0].content as ArrayBuffer).equals(pdf)).toBe(true);
  });

  it('refuses a sender domain that is not verified on the project, and sends nothing', async () => {
    const to = address('nope');
    const res = await project.api.post('/v1/send', { to, from: 'me@unverified.example', subject: 'x', body: 'x' });
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('DOMAIN_NOT_VERIFIED');
    expect((await project.api.get(`/contacts?search=${encodeURIComponent(to)}`)).body.data.total).toBe(0);
  });

  it('refuses bad input with field errors', async () => {
    const from = `x@${domain.domain}`;
    const cases: [unknown, string][] = [
      [{ from, subject: 's', body: 'b' }, 'to'],
      [{ to: 'not-an-email', from, subject: 's', body: 'b' }, 'to'],
      [{ to: address('v'), from, body: 'b' }, 'subject'],
      [{ to: address('v'), from, subject: 's' }, 'body'],
      [{ to: address('v'), subject: 's', body: 'b' }, 'from'],
      [{ to: address('v'), from, subject: 's', body: 'b', headers: { Subject: 'evil' } }, 'headers.Subject'],
      [{ to: address('v'), from, subject: 's', body: 'b', headers: { 'X-A': 'a\r\nBcc: x@y.z' } }, 'headers.X-A'],
      [{ to: address('v'), from, subject: 's', body: 'b', headers: { 'X-A': 'a\u0000b' } }, 'headers.X-A'],
      ...['Received', 'Authentication-Results', 'Content-Disposition', 'Resent-From', 'Disposition-Notification-To', 'ARC-Seal', 'X-Mailroom-Test'].map(
        (name): [unknown, string] => [{ to: address('v'), from, subject: 's', body: 'b', headers: { [name]: 'x' } }, `headers.${name}`],
      ),
      [{ to: address('v'), from, subject: 's', body: 'b', attachments: [{ filename: 'a', content: '***', contentType: 'text/plain' }] }, 'attachments.0.content'],
      [{ to: address('v'), from, subject: 's', body: 'b', attachments: Array.from({ length: 11 }, () => ({ filename: 'a', content: 'QQ==', contentType: 'text/plain' })) }, 'attachments'],
    ];
    for (const [body, field] of cases) {
      const res = await project.api.post('/v1/send', body);
      expect(res.status, JSON.stringify(body).slice(0, 100)).toBe(422);
      expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  it('a bounce (5xx) records email.bounce and unsubscribes the contact', async () => {
    const to = address('bounce');
    instance.smtp.rejectRecipients.add(to);
    const created = await project.api.post('/contacts', { email: to });
    const res = await project.api.post('/v1/send', { to, from: `x@${domain.domain}`, subject: 'x', body: 'x' });
    expect(res.status).toBe(200);
    const contactId = created.body.data.id;
    await eventually(async () => ((await eventNames(contactId)).includes('email.bounce') ? true : undefined), 20_000);
    // The unsubscribe is the contact's next turn after the bounce's: waited for, not raced.
    await eventually(async () => ((await eventNames(contactId)).includes('contact.unsubscribed') ? true : undefined), 20_000);
    const contact = await project.api.get(`/contacts/${contactId}`);
    expect(contact.body.data.subscribed).toBe(false);
    expect(instance.smtp.messages.some((m) => m.rcptTo.includes(to))).toBe(false);
  });

  describe('with a template', () => {
    const template = async (type: 'TRANSACTIONAL' | 'MARKETING', extra: Record<string, unknown> = {}) => {
      const res = await project.api.post('/templates', {
        name: `${type} ${++n}`,
        type,
        subject: 'Hello {{first ?? there}}',
        body: '<p>Dear {{first ?? customer}}, see you. <a href="{{unsubscribeUrl}}">unsubscribe</a></p>',
        from: `team@${domain.domain}`,
        fromName: 'The Team',
        replyTo: `reply@${domain.domain}`,
        ...extra,
      });
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    };

    it('supplies subject, body, from and reply-to; request fields override them', async () => {
      const id = await template('TRANSACTIONAL');
      const [plain, overridden] = [address('tpl'), address('tpl')];
      expect((await project.api.post('/v1/send', { to: plain, template: id, data: { first: 'Bo' } })).status).toBe(200);
      expect((await project.api.post('/v1/send', { to: overridden, template: id, subject: 'Custom {{first}}', name: 'Desk', data: { first: 'Cy' } })).status).toBe(200);
      const a = await received(plain);
      expect(a.parsed.subject).toBe('Hello Bo');
      expect(a.parsed.from).toMatchObject({ name: 'The Team', address: `team@${domain.domain}` });
      expect(a.parsed.replyTo?.[0]?.address).toBe(`reply@${domain.domain}`);
      expect(a.parsed.html).toContain('Dear Bo');
      // The system variable is the contact's own unsubscribe link, left as it is (not click-tracked).
      expect(a.parsed.html).toMatch(new RegExp(`href="${instance.url}/unsubscribe/[^"]+"`));
      const b = await received(overridden);
      expect(b.parsed.subject).toBe('Custom Cy');
      expect(b.parsed.from).toMatchObject({ name: 'Desk' });
    });

    it('an unknown template is a 422 on field template', async () => {
      const res = await project.api.post('/v1/send', { to: address('x'), template: 'no-such-template' });
      expect(res.status).toBe(422);
      expect(res.body.error.errors[0]).toMatchObject({ field: 'template', code: 'not_found' });
    });

    it('a marketing template reaches a subscribed contact with one-click unsubscribe headers, and never an unsubscribed one', async () => {
      const id = await template('MARKETING');
      const [fan, gone] = [address('fan'), address('gone')];
      await project.api.post('/contacts', { email: fan, subscribed: true });
      await project.api.post('/contacts', { email: gone, subscribed: false });
      const res = await project.api.post('/v1/send', { to: [fan, gone], template: id });
      expect(res.status).toBe(200);
      expect(res.body.data.emails.map((e: { status: string }) => e.status)).toEqual(['QUEUED', 'SKIPPED']);
      const mail = await received(fan);
      expect(header(mail, 'list-unsubscribe')).toMatch(new RegExp(`^<${instance.url}/unsubscribe/[^>]+>$`));
      expect(header(mail, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
      // Give the skipped one every chance to arrive: it must not.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(instance.smtp.messages.some((m) => m.rcptTo.includes(gone))).toBe(false);
    });

    it('a transactional template reaches an unsubscribed contact', async () => {
      const id = await template('TRANSACTIONAL');
      const to = address('txn');
      await project.api.post('/contacts', { email: to, subscribed: false });
      const res = await project.api.post('/v1/send', { to, template: id });
      expect(res.body.data.emails[0].status).toBe('QUEUED');
      await received(to);
    });
  });

  it('new contacts are unsubscribed unless subscribed:true; an existing contact keeps its state', async () => {
    const from = `x@${domain.domain}`;
    const [quiet, keen, known] = [address('quiet'), address('keen'), address('known')];
    await project.api.post('/contacts', { email: known, subscribed: true });
    const sent = await project.api.post('/v1/send', { to: [quiet], from, subject: 's', body: 'b' });
    const opted = await project.api.post('/v1/send', { to: [keen, known], from, subject: 's', body: 'b', subscribed: true });
    const state = async (id: string) => (await project.api.get(`/contacts/${id}`)).body.data.subscribed;
    expect(await state(sent.body.data.emails[0].contact.id)).toBe(false);
    expect(await state(opted.body.data.emails[0].contact.id)).toBe(true);
    // The mailer adds the email's counts to the contact before it writes DELIVERED; a CI run saw
    // them undo this PATCH on FerretDB, so it waits (waitForDelivered).
    await waitForDelivered(project.api, opted.body.data.emails[1].email, DRAIN);
    expect((await project.api.patch(`/contacts/${opted.body.data.emails[1].contact.id}`, { subscribed: false })).status).toBe(200);
    const again = await project.api.post('/v1/send', { to: known, from, subject: 's', body: 'b', subscribed: true });
    expect(await state(again.body.data.emails[0].contact.id)).toBe(false);
  });

  it('a repeat with the same Idempotency-Key sends nothing more', async () => {
    const to = address('idem');
    const body = { to, from: `x@${domain.domain}`, subject: 'once', body: 'once' };
    const headers = { 'Idempotency-Key': `send-${to}` };
    const first = await project.api.post('/v1/send', body, { headers });
    const second = await project.api.post('/v1/send', body, { headers });
    expect(second.body).toEqual(first.body);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    await received(to);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(instance.smtp.messages.filter((m) => m.rcptTo.includes(to))).toHaveLength(1);
  });

  it('a spam complaint, from a feedback report quoting the message, records email.complaint and unsubscribes', async () => {
    const to = address('complainer');
    await project.api.post('/contacts', { email: to, subscribed: true });
    const sent = await project.api.post('/v1/send', { to, from: `x@${domain.domain}`, subject: 'deal', body: 'deal' });
    const mail = await received(to);
    await waitForDelivered(project.api, sent.body.data.emails[0].email, DRAIN); // the complaint updates the email
    const report = [
      'Content-Type: message/feedback-report', '', 'Feedback-Type: abuse', 'User-Agent: SomeISP/1.0', '',
      '--quoted original--', `From: x@${domain.domain}`, `Message-ID:`, ` ${mail.parsed.messageId}`, 'Subject: deal', '',
    ].join('\r\n');
    const res = await project.api.post('/v1/complaints', { report });
    expect(res.status).toBe(202);
    const contactId = sent.body.data.emails[0].contact.id;
    expect(res.body.data).toEqual({ emailId: sent.body.data.emails[0].email, contactId });
    await eventually(async () => ((await eventNames(contactId)).includes('email.complaint') ? true : undefined));
    // The complaint is recorded, then the contact unsubscribed: two turns, the second a moment later.
    await eventually(async () => ((await project.api.get(`/contacts/${contactId}`)).body.data.subscribed === false ? true : undefined));
    // Reported twice, recorded once.
    expect((await project.api.post('/v1/complaints', { emailId: sent.body.data.emails[0].email })).status).toBe(202);
    await new Promise((r) => setTimeout(r, 500));
    expect((await eventNames(contactId)).filter((n) => n === 'email.complaint')).toHaveLength(1);
    // Nothing of ours in the report, or another project's email: refused.
    expect((await project.api.post('/v1/complaints', { report: 'Message-ID: <abc@elsewhere>' })).status).toBe(422);
    const other = await newProject(instance, 'Other');
    expect((await other.api.post('/v1/complaints', { emailId: sent.body.data.emails[0].email })).status).toBe(404);
  });
});

