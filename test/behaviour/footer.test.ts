// The footer of marketing email: campaigns, marketing templates through /v1/send and workflows
// end with the unsubscribe and preference links and the project's postal address, in the
// contact's language (else the project's), once; transactional mail never gets one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { waitForDelivered } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { byMode, startInstance, type Instance } from '../harness/instance.ts';
import { emailIdOf, type ReceivedMessage } from '../harness/smtp-sink.ts';
import { buildWorkflow, track, unique } from '../harness/workflows.ts';

const DRAIN = byMode({ embedded: 20_000, distributed: 60_000 });
const GERMAN = 'Sie erhalten diese E-Mail, weil Sie bei Blumen &amp; Co angemeldet sind.';
const FRENCH = 'Vous recevez cet e-mail parce que vous êtes abonné à Blumen &amp; Co.';
const ADDRESS = 'Blumenweg 1\n10115 Berlin';

describe('the footer of marketing email', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;
  let quiet: ProjectAccess;
  let quietDomain: Domain;

  beforeAll(async () => {
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0' } });
    project = await newProject(instance, 'Blumen & Co');
    const set = await instance.api.patch(`/projects/${project.projectId}`, { language: 'fr', address: ` ${ADDRESS} ` }, { auth: project.token });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    quiet = await newProject(instance, 'No footer');
    expect((await instance.api.patch(`/projects/${quiet.projectId}`, { footer: false }, { auth: quiet.token })).status).toBe(200);
    domain = await verifiedDomain(instance, project);
    quietDomain = await verifiedDomain(instance, quiet);
  });
  afterAll(() => instance.dispose());

  const address = (tag: string) => `${unique(tag)}@customer.example`;
  const header = (m: ReceivedMessage, name: string) => m.parsed.headers.find((h) => h.key === name)?.value;
  const unsubscribeUrl = (m: ReceivedMessage) => /^<([^>]+)>$/.exec(header(m, 'list-unsubscribe') ?? '')?.[1] ?? '';
  const count = (haystack: string, needle: string) => haystack.split(needle).length - 1;

  async function template(owner: ProjectAccess, ownerDomain: Domain, type: 'MARKETING' | 'TRANSACTIONAL', body: string) {
    const res = await owner.api.post('/templates', { name: unique('t'), subject: unique('subject'), body, from: `news@${ownerDomain.domain}`, type });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data.id as string;
  }

  /** A subscribed contact, sent the template over /v1/send; the message as received. */
  async function sendTo(owner: ProjectAccess, templateId: string, data: Record<string, unknown> = {}) {
    const to = address('reader');
    expect((await owner.api.post('/contacts', { email: to, subscribed: true, data })).status).toBe(201);
    const sent = await owner.api.post('/v1/send', { to, template: templateId });
    expect(sent.body.data?.emails?.[0]?.status, JSON.stringify(sent.body)).toBe('QUEUED');
    return instance.smtp.waitForMailTo(to, DRAIN);
  }

  it("ends marketing email with the links and the postal address, in HTML and text, in the contact's locale, else the project's language", async () => {
    const id = await template(project, domain, 'MARKETING', '<html><body><p>Spring flowers are here, {{name ?? friend}}.</p></body></html>');

    const german = await sendTo(project, id, { locale: 'de', name: 'Ada' });
    const url = unsubscribeUrl(german);
    expect(url).toMatch(new RegExp(`^${instance.url}/unsubscribe/`));
    const html = german.parsed.html ?? '';
    expect(html).toContain(GERMAN);
    expect(html).toContain(`href="${url}"`);
    expect(count(html, url)).toBe(1);
    expect(html).toMatch(new RegExp(`href="${instance.url}/manage/[^"]+"[^>]*>E-Mail-Einstellungen</a>`));
    expect(html).toContain('>Abmelden</a>');
    expect(html).toContain('Blumenweg 1<br>10115 Berlin');
    expect(html.indexOf(GERMAN)).toBeGreaterThan(html.indexOf('Spring flowers are here, Ada.'));
    expect(html.indexOf(GERMAN)).toBeLessThan(html.search(/<\/body>/i)); // inside the document, not after it
    const text = german.parsed.text ?? '';
    expect(text).toContain(`Abmelden: ${url}`);
    expect(text).toMatch(/E-Mail-Einstellungen: \S+\/manage\//);
    expect(text).toContain('Blumenweg 1\n10115 Berlin');
    expect(text.indexOf('Abmelden')).toBeGreaterThan(text.indexOf('Spring flowers are here, Ada.'));

    // No locale (or one we do not speak): the project's language.
    for (const data of [{}, { locale: 'xx' }]) {
      const french = await sendTo(project, id, data);
      expect(french.parsed.html).toContain(FRENCH);
      expect(french.parsed.html).toContain('>Se désabonner</a>');
      expect(french.parsed.html).not.toContain(GERMAN);
      expect(french.parsed.text).toContain(`Se désabonner: ${unsubscribeUrl(french)}`);
    }
  });

  it('a body that already carries the unsubscribe link gets no footer: the link is there once', async () => {
    const id = await template(project, domain, 'MARKETING', '<p>News. <a href="{{unsubscribeUrl}}">Stop these</a></p>');
    const mail = await sendTo(project, id, { locale: 'de' });
    const url = unsubscribeUrl(mail);
    expect(count(mail.parsed.html ?? '', url)).toBe(1);
    expect(mail.parsed.html).not.toContain(GERMAN);
    expect(mail.parsed.html).not.toContain('Blumenweg');
    expect(mail.parsed.text).not.toContain('Abmelden');
  });

  it('transactional email gets no footer and no List-Unsubscribe', async () => {
    const id = await template(project, domain, 'TRANSACTIONAL', '<p>Your order has shipped.</p>');
    const mail = await sendTo(project, id, { locale: 'de' });
    expect(mail.parsed.html).not.toContain(GERMAN);
    expect(mail.parsed.html).not.toContain('/unsubscribe/');
    expect(mail.parsed.text).not.toContain('Blumenweg');
    expect(header(mail, 'list-unsubscribe')).toBeUndefined();
  });

  it('campaign email gets the footer and a one-click List-Unsubscribe (RFC 8058) that unsubscribes with one POST', async () => {
    const own = await newProject(instance, 'Blumen & Co');
    await instance.api.patch(`/projects/${own.projectId}`, { language: 'de' }, { auth: own.token });
    const ownDomain = await verifiedDomain(instance, own);
    const to = address('campaign');
    const contact = await own.api.post('/contacts', { email: to, subscribed: true });
    const subject = unique('Sale');
    const campaign = await own.api.post('/campaigns', { name: 'Sale', subject, body: '<p>Everything must go.</p>', from: `news@${ownDomain.domain}`, audienceType: 'ALL' });
    expect(campaign.status, JSON.stringify(campaign.body)).toBe(200);
    expect((await own.api.post(`/campaigns/${campaign.body.data.id}/send`, {})).status).toBe(200);
    const mail = await instance.smtp.waitForMailTo(to, DRAIN);
    expect(mail.parsed.html).toContain(GERMAN);
    expect(header(mail, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    const url = unsubscribeUrl(mail);
    expect(count(mail.parsed.html ?? '', url)).toBe(1);
    await waitForDelivered(own.api, emailIdOf(mail), DRAIN); // unsubscribing updates the contact, as the mailer's counts do

    // What a mailbox provider does on "unsubscribe": one POST, no page, no further step.
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });
    expect(res.status).toBe(200);
    expect((await own.api.get(`/contacts/${contact.body.data.id}`)).body.data.subscribed).toBe(false);
  });

  it('a workflow sending a marketing template adds the footer too', async () => {
    const event = unique('signed-up');
    await buildWorkflow(project, { eventName: event, steps: [{ name: 'welcome', type: 'SEND_EMAIL', templateId: await template(project, domain, 'MARKETING', '<p>Welcome aboard.</p>') }] });
    const to = address('flow');
    expect((await project.api.post('/contacts', { email: to, subscribed: true, data: { locale: 'de' } })).status).toBe(201);
    await track(project, to, event);
    const mail = await instance.smtp.waitForMailTo(to, DRAIN);
    expect(mail.parsed.html).toContain(GERMAN);
    expect(mail.parsed.text).toContain(`Abmelden: ${unsubscribeUrl(mail)}`);
  });

  it('a project can turn the footer off; the List-Unsubscribe headers stay', async () => {
    const id = await template(quiet, quietDomain, 'MARKETING', '<p>Quiet news.</p>');
    const mail = await sendTo(quiet, id, { locale: 'de' });
    expect(mail.parsed.html).not.toContain('Abmelden');
    expect(mail.parsed.html).not.toContain('/unsubscribe/');
    expect(mail.parsed.text?.trim()).toBe('Quiet news.');
    expect(header(mail, 'list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
  });

  it('PATCH /projects/:id sets the address and the footer switch, and refuses bad values without changing anything', async () => {
    const owner = await newProject(instance, 'Settings');
    const path = `/projects/${owner.projectId}`;
    const as = { auth: owner.token };
    expect((await instance.api.get(path, as)).body.data).toMatchObject({ address: '', footer: true });

    const set = await instance.api.patch(path, { address: '  1 Main St\nSpringfield  ', footer: false }, as);
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ address: '1 Main St\nSpringfield', footer: false });

    for (const bad of [{ footer: 'no' }, { address: 'x'.repeat(501) }, { address: null }, { addres: 'typo' }]) {
      const res = await instance.api.patch(path, bad, as);
      expect(res.status, JSON.stringify(bad)).toBe(422);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
    }
    expect((await instance.api.get(path, as)).body.data).toMatchObject({ address: '1 Main St\nSpringfield', footer: false });
    expect((await instance.api.patch(path, { address: '', footer: true }, as)).body.data).toMatchObject({ address: '', footer: true });
  });
});
