// What the links in an email lead to, driven over HTTP as a mail client and a reader would:
// the open pixel, the click redirect, and the unsubscribe / subscribe / manage pages, including
// the RFC 8058 one-click POST. Emails are really sent (to the SMTP sink) so opens and clicks
// belong to real email records; contact links are signed here with the instance's LINK_SECRET.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PAGE_RATE_PER_MINUTE } from '../../apps/api/public/pages.ts';
import { signToken } from '../../domain/mail/links.ts';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, type EventRecord, sleep, waitForDelivered } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { QUIET_MS, startInstance, type Instance } from '../harness/instance.ts';
import type { ReceivedMessage } from '../harness/smtp-sink.ts';

const LINK_SECRET = 'public-pages-test-secret-0123456789';
const key = Buffer.from(LINK_SECRET);
const PROJECT_NAME = '<script>alert("x")</script> & Friends';

let instance: Instance;
let project: ProjectAccess;
let domain: Domain;

beforeAll(async () => {
  // In-process (embedded) the platform reads the test's own environment; a distributed stack gets `env`.
  vi.stubEnv('LINK_SECRET', LINK_SECRET);
  instance = await startInstance({ env: { LINK_SECRET, EMAIL_RATE_PER_SECOND: '0' } });
  project = await newProject(instance, PROJECT_NAME);
  domain = await verifiedDomain(instance, project);
});
afterAll(async () => {
  await instance?.dispose();
  vi.unstubAllEnvs();
});

let seq = 0;
const address = (tag: string) => `${tag}-${++seq}-${Date.now().toString(36)}@reader.example`;

/** A request as a browser or mail client makes it: no API key, redirects not followed. */
async function visit(path: string, init: RequestInit = {}) {
  const res = await fetch(`${instance.url}${path}`, { redirect: 'manual', ...init });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body, html: body.toString('utf8') };
}

const oneClick = (path: string) =>
  visit(path, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click' });

const contactLink = (page: 'unsubscribe' | 'subscribe' | 'manage', contactId: string) => `/${page}/${signToken(key, 'contact', contactId)}`;

async function createContact(email: string, data?: Record<string, unknown>, api = project.api): Promise<string> {
  const res = await api.post('/contacts', { email, ...(data ? { data } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id;
}

async function getContact(id: string, api = project.api) {
  const res = await api.get(`/contacts/${id}`);
  expect(res.status).toBe(200);
  return res.body.data as { id: string; email: string; subscribed: boolean };
}

async function eventsNamed(contactId: string, name: string, api = project.api): Promise<EventRecord[]> {
  const res = await api.get(`/events/contact/${contactId}?limit=100`);
  expect(res.status).toBe(200);
  return (res.body.data as EventRecord[]).filter((e) => e.name === name);
}

/** Waits until the contact has `count` events of `name`, then checks for a while that no more come. */
async function expectEvents(contactId: string, name: string, count: number): Promise<EventRecord[]> {
  await eventually(async () => ((await eventsNamed(contactId, name)).length >= count ? true : undefined), 20_000, `${count} × ${name}`);
  await sleep(QUIET_MS);
  const found = await eventsNamed(contactId, name);
  expect(found).toHaveLength(count);
  return found;
}

const TARGET = 'https://shop.example/offer?item=1&ref=mail';

/** Sends a real email with one link through /v1/send and returns it as the recipient got it. */
async function sendEmail(to: string): Promise<{ contactId: string; emailId: string; mail: ReceivedMessage }> {
  const res = await project.api.post('/v1/send', {
    to,
    from: `news@${domain.domain}`,
    subject: 'Offer',
    body: `<html><body><p>Hello, see <a href="${TARGET.replace(/&/g, '&amp;')}">our offer</a>.</p></body></html>`,
  });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const sent = res.body.data.emails[0];
  const mail = await instance.smtp.waitForMailTo(to, 20_000);
  await waitForDelivered(project.api, sent.email, 20_000); // opens and clicks update the email
  return { contactId: sent.contact.id, emailId: sent.email, mail };
}

const pathOf = (url: string) => url.slice(instance.url.length);
const decodeAttr = (s: string) => s.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'");

function pixelPath(mail: ReceivedMessage): string {
  const match = new RegExp(`src="(${instance.url}/t/open/[^"]+)"`).exec(mail.parsed.html ?? '');
  expect(match, 'the email has an open pixel').not.toBeNull();
  return pathOf(decodeAttr(match![1]));
}

function clickPath(mail: ReceivedMessage): string {
  const match = new RegExp(`href="(${instance.url}/t/click/[^"]+)"`).exec(mail.parsed.html ?? '');
  expect(match, 'the email has a tracked link').not.toBeNull();
  return pathOf(decodeAttr(match![1]));
}

function expectGif(res: Awaited<ReturnType<typeof visit>>) {
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('image/gif');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.body.subarray(0, 6).toString('latin1')).toBe('GIF89a');
}

function expectPage(res: Awaited<ReturnType<typeof visit>>, status: number, lang?: string) {
  expect(res.status, res.html).toBe(status);
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.headers.get('referrer-policy')).toBe('no-referrer');
  expect(res.headers.get('x-frame-options')).toBe('DENY');
  expect(res.headers.get('location')).toBeNull();
  if (lang) expect(res.html).toContain(`<html lang="${lang}">`);
}

/** The `action` of each form on a page. */
const formActions = (html: string) => [...html.matchAll(/<form method="post" action="([^"]*)"/g)].map((m) => decodeAttr(m[1]));

describe('open pixel', () => {
  it('answers the same GIF to every token, and records email.open only for a real one', async () => {
    const { contactId, emailId, mail } = await sendEmail(address('open'));
    const pixel = pixelPath(mail);
    // The platform signs with LINK_SECRET: what this test signs is what the email carries.
    expect(pixel).toBe(`/t/open/${signToken(key, 'open', emailId)}`);
    // Another email, whose pixel is only ever requested with broken tokens.
    const other = await sendEmail(address('never-opened'));

    const good = await visit(pixel);
    expectGif(good);
    for (const bad of [
      `/t/open/${other.emailId}`,
      `/t/open/${other.emailId}.${'A'.repeat(22)}`,
      `/t/open/${signToken(key, 'click', other.emailId)}`,
      `/t/open/${signToken(Buffer.from('another secret'), 'open', other.emailId)}`,
      `/t/open/${signToken(key, 'open', other.emailId)}x`,
      '/t/open/%E0%A4%A',
      `/t/open/${'x'.repeat(5000)}`,
      '/t/open/a/b',
    ]) {
      const res = await visit(bad);
      expectGif(res);
      expect(res.body.equals(good.body), bad).toBe(true);
    }

    const [open] = await expectEvents(contactId, 'email.open', 1);
    expect(open.data).toEqual({ emailId });
    expect(await eventsNamed(other.contactId, 'email.open')).toHaveLength(0);
  });

  it('records one open per request, and a repeat within seconds only once', async () => {
    const { contactId, mail } = await sendEmail(address('reopen'));
    const pixel = pixelPath(mail);
    expectGif(await visit(pixel));
    await expectEvents(contactId, 'email.open', 1);
    // A mail client fetching the image twice at once is one open.
    expectGif(await visit(pixel));
    await sleep(QUIET_MS);
    expect(await eventsNamed(contactId, 'email.open')).toHaveLength(1);
  });

  it('answers a HEAD with the image and records nothing', async () => {
    const { contactId, mail } = await sendEmail(address('head'));
    const res = await visit(pixelPath(mail), { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('image/gif');
    await sleep(QUIET_MS);
    expect(await eventsNamed(contactId, 'email.open')).toHaveLength(0);
  });
});

describe('click redirect', () => {
  it('redirects to exactly the linked URL and records email.click with it', async () => {
    const { contactId, emailId, mail } = await sendEmail(address('click'));
    const link = clickPath(mail);
    const res = await visit(link);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(TARGET);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const [click] = await expectEvents(contactId, 'email.click', 1);
    expect(click.data).toEqual({ emailId, url: TARGET });
  });

  it('answers a tampered or incomplete link with a 404 page, never a redirect, and records nothing', async () => {
    const { contactId, emailId, mail } = await sendEmail(address('tamper'));
    const link = clickPath(mail);
    const token = link.slice('/t/click/'.length, link.indexOf('?'));
    const signed = (url: string) => `/t/click/${signToken(key, 'click', emailId, url)}?u=${encodeURIComponent(url)}`;
    // Another MAC: the real one's last two characters replaced by AA, or by BB where they are AA
    // already (one MAC in 4,096), since that link would be the real one.
    const otherMac = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`;

    for (const bad of [
      `/t/click/${token}?u=${encodeURIComponent('https://evil.example/')}`, // another URL under the same MAC
      `/t/click/${token}?u=${encodeURIComponent(`${TARGET}&x=1`)}`,
      `/t/click/${otherMac}?u=${encodeURIComponent(TARGET)}`,
      `/t/click/${signToken(key, 'open', emailId)}?u=${encodeURIComponent(TARGET)}`, // another purpose
      `/t/click/${token}`, // no target
      `/t/click/${token}?u=${encodeURIComponent(TARGET)}&u=${encodeURIComponent(TARGET)}`,
      signed('javascript:alert(1)'), // signed, but not http(s)
      signed('//evil.example/'),
      signed('ftp://files.example/x'),
      '/t/click',
    ]) {
      const res = await visit(bad);
      expect(res.status, bad).toBe(404);
      expectPage(res, 404, 'en');
      expect(res.html).toContain('Link not valid');
    }

    // The real link still works; after it, exactly its click is recorded.
    expect((await visit(link)).status).toBe(302);
    await expectEvents(contactId, 'email.click', 1);
  });
});

describe('subscription pages', () => {
  it('asks in the contact’s language, then the project’s, then English', async () => {
    const other = await newProject(instance, 'Tienda');
    const patched = await instance.api.patch(`/projects/${other.projectId}`, { language: 'es' }, { auth: other.token });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    const unshipped = await newProject(instance, 'Mise');
    expect((await instance.api.patch(`/projects/${unshipped.projectId}`, { language: 'ja' }, { auth: unshipped.token })).status).toBe(200);

    const cases: { api: ProjectAccess; locale?: string; lang: string; text: string }[] = [
      { api: project, locale: 'de', lang: 'de', text: 'abmelden?' },
      { api: project, locale: 'FR', lang: 'fr', text: 'Désabonner' },
      { api: project, locale: 'es', lang: 'es', text: '¿Cancelar la suscripción de' },
      { api: project, lang: 'en', text: 'Unsubscribe' },
      { api: other, locale: 'ja', lang: 'es', text: '¿Cancelar la suscripción de' },
      { api: other, lang: 'es', text: '¿Cancelar la suscripción de' },
      { api: other, locale: 'de', lang: 'de', text: 'abmelden?' },
      { api: unshipped, locale: 'ja', lang: 'en', text: 'Unsubscribe' },
      { api: unshipped, lang: 'en', text: 'Unsubscribe' },
    ];
    for (const c of cases) {
      const email = address(`lang-${c.lang}`);
      const id = await createContact(email, c.locale ? { locale: c.locale } : undefined, c.api.api);
      const link = contactLink('unsubscribe', id);
      const res = await visit(link);
      expectPage(res, 200, c.lang);
      expect(res.html, JSON.stringify(c)).toContain(c.text);
      expect(res.html).toContain(email);
      expect(formActions(res.html)).toEqual([link]);
      // Showing the page changes nothing.
      expect((await getContact(id, c.api.api)).subscribed).toBe(true);
    }
  });

  it('unsubscribes on a one-click POST (RFC 8058) and records contact.unsubscribed once', async () => {
    const email = address('oneclick');
    const id = await createContact(email);
    const link = contactLink('unsubscribe', id);

    const res = await oneClick(link);
    expectPage(res, 200, 'en');
    expect(res.html).toContain('is unsubscribed from');
    expect(formActions(res.html)).toEqual([contactLink('subscribe', id)]); // the re-subscribe button
    expect((await getContact(id)).subscribed).toBe(false);
    expect(await eventsNamed(id, 'contact.unsubscribed')).toHaveLength(1);

    // Again: the same answer, nothing changes, nothing is recorded.
    expectPage(await oneClick(link), 200, 'en');
    expectPage(await visit(link, { method: 'POST' }), 200, 'en'); // the page's own form, or no body at all
    expect((await getContact(id)).subscribed).toBe(false);
    expect(await eventsNamed(id, 'contact.unsubscribed')).toHaveLength(1);
  });

  it('unsubscribes through the List-Unsubscribe header of a real marketing email', async () => {
    const template = await project.api.post('/templates', {
      name: 'Newsletter',
      subject: 'News',
      body: '<p>News. <a href="{{unsubscribeUrl}}">Unsubscribe</a></p>',
      from: `news@${domain.domain}`,
      type: 'MARKETING',
    });
    expect(template.status, JSON.stringify(template.body)).toBe(201);
    const to = address('list');
    const sent = await project.api.post('/v1/send', { to, template: template.body.data.id, subscribed: true });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const contactId = sent.body.data.emails[0].contact.id as string;
    const mail = await instance.smtp.waitForMailTo(to, 20_000);
    await waitForDelivered(project.api, sent.body.data.emails[0].email, 20_000); // unsubscribing updates the contact

    const header = (name: string) => mail.parsed.headers.find((h) => h.key === name)?.value;
    expect(header('list-unsubscribe-post')).toBe('List-Unsubscribe=One-Click');
    const url = /^<([^>]+)>$/.exec(header('list-unsubscribe') ?? '')?.[1];
    expect(url).toBe(`${instance.url}${contactLink('unsubscribe', contactId)}`);
    expect(mail.parsed.html).toContain(`href="${url}"`); // {{unsubscribeUrl}} is the same page, not a tracked click

    expectPage(await oneClick(pathOf(url!)), 200);
    expect((await getContact(contactId)).subscribed).toBe(false);
    expect(await eventsNamed(contactId, 'contact.unsubscribed')).toHaveLength(1);
  });

  it('subscribes again from the subscribe page', async () => {
    const id = await createContact(address('resub'), { locale: 'de' });
    expectPage(await oneClick(contactLink('unsubscribe', id)), 200, 'de');

    const page = await visit(contactLink('subscribe', id));
    expectPage(page, 200, 'de');
    expect(page.html).toContain('anmelden?');
    expect(formActions(page.html)).toEqual([contactLink('subscribe', id)]);
    expect((await getContact(id)).subscribed).toBe(false);

    const done = await visit(contactLink('subscribe', id), { method: 'POST' });
    expectPage(done, 200, 'de');
    expect(done.html).toContain('angemeldet.');
    expect((await getContact(id)).subscribed).toBe(true);
    expect(await eventsNamed(id, 'contact.subscribed')).toHaveLength(1);

    expectPage(await visit(contactLink('subscribe', id), { method: 'POST' }), 200, 'de');
    expect(await eventsNamed(id, 'contact.subscribed')).toHaveLength(1);
  });

  it('shows the current state on the manage page, with the one button that flips it', async () => {
    const email = address('manage');
    const id = await createContact(email, { locale: 'fr' });

    const subscribed = await visit(contactLink('manage', id));
    expectPage(subscribed, 200, 'fr');
    expect(subscribed.html).toContain('reçoit les e-mails marketing');
    expect(formActions(subscribed.html)).toEqual([contactLink('unsubscribe', id)]);

    expectPage(await oneClick(contactLink('unsubscribe', id)), 200, 'fr');
    const unsubscribed = await visit(contactLink('manage', id));
    expectPage(unsubscribed, 200, 'fr');
    expect(unsubscribed.html).toContain('ne reçoit pas les e-mails marketing');
    expect(formActions(unsubscribed.html)).toEqual([contactLink('subscribe', id)]);
  });

  it('answers a bad token with a 404 page and changes nothing', async () => {
    const id = await createContact(address('bad'));
    const token = signToken(key, 'contact', id);
    for (const page of ['unsubscribe', 'subscribe', 'manage']) {
      for (const bad of [
        id,
        `${id}.${'A'.repeat(22)}`,
        `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`,
        signToken(key, 'open', id),
        signToken(Buffer.from('another secret'), 'contact', id),
        'x'.repeat(3000),
      ]) {
        for (const method of ['GET', 'POST']) {
          const res = await visit(`/${page}/${bad}`, { method });
          expectPage(res, 404, 'en');
          expect(res.html).toContain('Link not valid');
        }
      }
      expectPage(await visit(`/${page}/`), 404);
      expectPage(await visit(`/${page}/${token}/extra`), 404);
    }
    // The browser's language when no contact is known.
    const german = await visit(`/manage/${id}`, { headers: { 'accept-language': 'fr;q=0.5, de-CH, en;q=0.8' } });
    expectPage(german, 404, 'de');
    expect(german.html).toContain('Ungültiger Link');
    expect((await getContact(id)).subscribed).toBe(true);
    expect(await eventsNamed(id, 'contact.unsubscribed')).toHaveLength(0);
  });

  it('answers the links of a deleted contact with a 404 page', async () => {
    const id = await createContact(address('deleted'));
    expectPage(await visit(contactLink('manage', id)), 200);
    expect((await project.api.delete(`/contacts/${id}`)).status).toBe(204);
    for (const page of ['unsubscribe', 'subscribe', 'manage'] as const) {
      expectPage(await visit(contactLink(page, id)), 404);
      expectPage(await visit(contactLink(page, id), { method: 'POST' }), 404);
    }
    expect((await project.api.get(`/contacts/${id}`)).status).toBe(404);
  });

  it('escapes every inserted value', async () => {
    const email = `o'neil+${++seq}@reader.example`;
    const id = await createContact(email);
    for (const res of [
      await visit(contactLink('unsubscribe', id)),
      await visit(contactLink('manage', id)),
      await oneClick(contactLink('unsubscribe', id)),
      await visit(contactLink('subscribe', id)),
    ]) {
      expectPage(res, 200);
      expect(res.html).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Friends');
      expect(res.html).toContain(email.replace("'", '&#39;'));
      expect(res.html).not.toContain('<script');
      expect(res.html).not.toContain(email);
    }
  });

  it('is self-contained and locked down: no scripts, no external assets, strict headers, no API key or budget', async () => {
    const id = await createContact(address('headers'));
    const res = await visit(contactLink('unsubscribe', id));
    expectPage(res, 200, 'en');
    expect(res.html).not.toMatch(/<script|<link|<img|<iframe|\bsrc=|url\(/i);
    expect(res.html).toMatch(/^<!doctype html>/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    // Not the JSON API: no envelope, no per-project budget.
    expect(res.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it(`answers more than ${PAGE_RATE_PER_MINUTE} requests a minute for one contact with a 429 page`, async () => {
    const id = await createContact(address('busy'));
    const link = contactLink('manage', id);
    for (let i = 0; i < PAGE_RATE_PER_MINUTE; i++) expect((await visit(link)).status).toBe(200);
    // Refused before any lookup, so in the browser's language.
    const refused = await visit(link, { headers: { 'accept-language': 'es-MX,es;q=0.9' } });
    expectPage(refused, 429, 'es');
    expect(refused.html).toContain('Demasiadas solicitudes');
    expect(refused.headers.get('retry-after')).toBe('60');
    // Another contact's links are not affected.
    expectPage(await visit(contactLink('manage', await createContact(address('calm')))), 200);
  });
});
