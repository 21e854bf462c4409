import type { Platform } from '../../runtime/platform.ts';
import { notFound } from '../errors.ts';
import { eventView, events } from '../events/collection.ts';
import { renderTemplate, templateScope } from '../templates/render.ts';
import { emailContents, emails, type EmailDoc } from './outbound.ts';

/** Events of one email listed by GET /emails/:id, oldest first (opens and clicks can repeat). */
export const EMAIL_EVENTS_SHOWN = 100;

/**
 * GET /emails/:id: one email of the project as /v1/send (or a campaign, or a workflow) made it, what
 * the relay answered, the bounce or complaint, and the events about it. Another project's email,
 * and the platform's own mail, are 404.
 */
export async function getEmail(p: Platform, projectId: string, id: string) {
  const email = await emails(p).findOne({ _id: id, projectId }, { projection: { html: 0, text: 0 } });
  if (!email) throw notFound('Email');
  // The contact's events naming this email: the contact's index ({projectId, contactId, createdAt})
  // narrows it to one contact's events, and `data.emailId` is tested on those (docs/indexes.md).
  const own = email.contactId
    ? await events(p.store).find({ projectId, contactId: email.contactId, 'data.emailId': id }, { sort: { createdAt: 1, _id: 1 }, limit: EMAIL_EVENTS_SHOWN })
    : [];
  return {
    id: email._id,
    to: email.to ?? null,
    from: email.from,
    subject: await subjectOf(p, email),
    type: email.kind,
    status: email.status,
    createdAt: email.createdAt,
    events: own.map(eventView),
    ...(email.response !== undefined ? { response: email.response } : {}),
    ...(email.bounce ? { bounce: { type: email.bounce.type, status: email.bounce.status ?? null, diagnostic: email.bounce.diagnostic ?? null } } : {}),
    // Still being retried after 4xx answers: since when, how often, and when next.
    ...(email.status === 'SENDING' && email.softFailures
      ? { deferred: { firstAt: email.softFailures.firstAt, count: email.softFailures.count, nextTryAt: email.retryAt ?? null } }
      : {}),
    ...(email.complaint ? { complaint: { at: email.complaint.at, detail: email.complaint.detail ?? null } } : {}),
    ...(email.reason !== undefined && !['DELIVERED', 'BOUNCED'].includes(email.status) ? { reason: email.reason } : {}),
  };
}

/**
 * The subject with the recipient's variables, as it left (link variables, which no subject
 * needs, render empty); null once the contact was deleted (anonymise.ts removes it).
 */
async function subjectOf(p: Platform, email: EmailDoc): Promise<string | null> {
  if (email.to === undefined) return null;
  const source = email.contentId !== undefined ? (await emailContents(p).findOne({ _id: email.contentId }, { projection: { subject: 1 } }))?.subject : email.subject;
  if (source === undefined) return null;
  return renderTemplate(source, templateScope(email.vars, { id: email.contactId, email: email.to }), 'text');
}
