import type { Request, Response, Router } from 'express';
import { contactActorClient } from '../../../actors/contact/client.ts';
import { accounts } from '../../../domain/accounts/collections.ts';
import { contacts } from '../../../domain/contacts/collection.ts';
import { AppError } from '../../../domain/errors.ts';
import { linkKey, verifyToken } from '../../../domain/mail/links.ts';
import { languageFromAcceptLanguage, pageLanguage, stringsFor, type Language } from '../../../domain/mail/pages-i18n.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { fill, sendPage, type Form } from './html.ts';

/** Our tokens are ~60 characters; anything much longer is not one and is not even checked. */
export const MAX_TOKEN = 256;

/**
 * Requests a valid link may make per minute (pages and posts together, per contact): far above
 * what a person does, low enough that a leaked link cannot be used to hammer the contact.
 */
export const PAGE_RATE_PER_MINUTE = 30;

/** The contact a subscription link names, with what its pages show. */
interface Target {
  contactId: string;
  token: string;
  email: string;
  subscribed: boolean;
  project: string;
  language: Language;
}

/** The pages that know no contact (a link not ours, or whose contact is gone) speak the browser's language. */
export function notFoundPage(req: Request, res: Response): void {
  const language = languageFromAcceptLanguage(req.get('accept-language'));
  const t = stringsFor(language);
  sendPage(res, 404, { language, title: t.notFoundTitle, paragraphs: [fill(t.notFoundText)] });
}

function tooManyPage(req: Request, res: Response): void {
  const language = languageFromAcceptLanguage(req.get('accept-language'));
  const t = stringsFor(language);
  res.setHeader('Retry-After', '60');
  sendPage(res, 429, { language, title: t.tooManyTitle, paragraphs: [fill(t.tooManyText)] });
}

export function errorPage(req: Request, res: Response): void {
  const language = languageFromAcceptLanguage(req.get('accept-language'));
  const t = stringsFor(language);
  sendPage(res, 500, { language, title: t.errorTitle, paragraphs: [fill(t.errorText)] });
}

/**
 * The subscription pages of DESIGN.md: GET shows a page (it never changes anything, so link
 * scanners and prefetchers are harmless); POST acts. `POST /unsubscribe/:token` is also the
 * RFC 8058 one-click target of `List-Unsubscribe`: it needs no cookie, no form token and no body
 * (a mailbox provider sends `List-Unsubscribe=One-Click`), and answers 200.
 */
export function subscriptionRoutes(router: Router, p: Platform): void {
  // Absolute paths under PUBLIC_URL's path, so forms work behind a path prefix too.
  const base = new URL(p.config.publicUrl).pathname.replace(/\/+$/, '');
  const action = (page: 'unsubscribe' | 'subscribe', t: Target) => `${base}/${page}/${t.token}`;

  const unsubscribeForm = (t: Target, button: string): Form => ({
    action: action('unsubscribe', t),
    button,
    fields: { 'List-Unsubscribe': 'One-Click' },
  });
  const subscribeForm = (t: Target, button: string): Form => ({ action: action('subscribe', t), button });

  /**
   * Resolves the token to its contact and project; answers 404 (not ours, or gone) or 429 (the
   * link's budget is spent, checked before any lookup) itself and returns null then.
   */
  async function target(req: Request, res: Response): Promise<Target | null> {
    const token = String(req.params.token);
    const contactId = token.length <= MAX_TOKEN ? verifyToken(await linkKey(p), 'contact', token) : null;
    if (!contactId) {
      notFoundPage(req, res);
      return null;
    }
    if (!(await withinBudget(p, contactId))) {
      tooManyPage(req, res);
      return null;
    }
    const contact = await contacts(p.store).findOne(
      { _id: contactId },
      { projection: { projectId: 1, email: 1, subscribed: 1, 'data.locale': 1 } },
    );
    const project = contact
      ? await accounts(p.store).projects.findOne({ _id: contact.projectId }, { projection: { name: 1, language: 1 } })
      : null;
    if (!contact || !project) {
      notFoundPage(req, res);
      return null;
    }
    return {
      contactId,
      token,
      email: contact.email,
      subscribed: contact.subscribed,
      project: project.name,
      language: pageLanguage(contact.data?.locale, project.language),
    };
  }

  /** POST: sets the subscription through the contact (which records the event on a change). */
  async function setSubscribed(req: Request, res: Response, subscribed: boolean): Promise<Target | null> {
    const found = await target(req, res);
    if (!found) return null;
    try {
      const { contact } = await contactActorClient(p, found.contactId).setSubscribed(subscribed);
      if (!contact) throw new AppError('NOT_FOUND', 'Contact not found');
      return { ...found, email: contact.email, subscribed: contact.subscribed };
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'NOT_FOUND')) throw err;
      notFoundPage(req, res); // deleted since the lookup
      return null;
    }
  }

  router.get('/unsubscribe/:token', async (req, res) => {
    const found = await target(req, res);
    if (!found) return;
    const t = stringsFor(found.language);
    const values = { email: found.email, project: found.project };
    sendPage(res, 200, {
      language: found.language,
      title: t.unsubscribeTitle,
      paragraphs: [fill(t.unsubscribeQuestion, values)],
      note: fill(t.unsubscribeExplain, values),
      form: unsubscribeForm(found, t.unsubscribeButton),
    });
  });

  router.post('/unsubscribe/:token', async (req, res) => {
    const done = await setSubscribed(req, res, false);
    if (!done) return;
    const t = stringsFor(done.language);
    sendPage(res, 200, {
      language: done.language,
      title: t.unsubscribedTitle,
      paragraphs: [fill(t.unsubscribedDone, { email: done.email, project: done.project })],
      note: fill(t.unsubscribedUndo),
      form: subscribeForm(done, t.resubscribeButton),
    });
  });

  router.get('/subscribe/:token', async (req, res) => {
    const found = await target(req, res);
    if (!found) return;
    const t = stringsFor(found.language);
    const values = { email: found.email, project: found.project };
    sendPage(res, 200, {
      language: found.language,
      title: t.subscribeTitle,
      paragraphs: [fill(t.subscribeQuestion, values)],
      note: fill(t.subscribeExplain, values),
      form: subscribeForm(found, t.subscribeButton),
    });
  });

  router.post('/subscribe/:token', async (req, res) => {
    const done = await setSubscribed(req, res, true);
    if (!done) return;
    const t = stringsFor(done.language);
    sendPage(res, 200, {
      language: done.language,
      title: t.subscribedTitle,
      paragraphs: [fill(t.subscribedDone, { email: done.email, project: done.project })],
      form: unsubscribeForm(done, t.unsubscribeButton),
    });
  });

  router.get('/manage/:token', async (req, res) => {
    const found = await target(req, res);
    if (!found) return;
    const t = stringsFor(found.language);
    const values = { email: found.email, project: found.project };
    sendPage(res, 200, {
      language: found.language,
      title: t.manageTitle,
      paragraphs: [fill(found.subscribed ? t.manageSubscribed : t.manageUnsubscribed, values)],
      form: found.subscribed ? unsubscribeForm(found, t.unsubscribeButton) : subscribeForm(found, t.subscribeButton),
    });
  });

  // A link cut short or with extra path: a page, not the API's JSON 404.
  for (const page of ['unsubscribe', 'subscribe', 'manage']) router.all(`/${page}{/*rest}`, notFoundPage);
}

async function withinBudget(p: Platform, contactId: string): Promise<boolean> {
  try {
    const decision = await p.limiter.consume(`pages:${contactId}`, PAGE_RATE_PER_MINUTE, 60_000);
    return decision.allowed;
  } catch (err) {
    // The budget is a guard, not a gate: without the limiter the page still works.
    p.log.warn({ err, contactId }, 'subscription page budget unavailable');
    return true;
  }
}
