import type { Platform } from '../../runtime/platform.ts';
import { contacts } from '../contacts/collection.ts';
import { requireVerifiedSender } from '../domains/sender.ts';
import { newId, nowIso } from '../ids.ts';
import { renderTemplate, templateScope } from '../templates/render.ts';
import { queueEmails, type EmailDoc } from './outbound.ts';

/** What a test email carries: a campaign's or a template's content. */
export interface TestContent {
  from: string;
  fromName?: string | null;
  replyTo?: string | null;
  subject: string;
  body: string;
}

/** A test email's `sourceId`: not its campaign's or template's own, so their stats never count it. */
export const testSourceId = (id: string) => `${id}:test`;

/**
 * One test email now to `email` (campaigns and templates): subject prefixed with "[TEST]", header
 * `X-Mailroom-Test: true`, always transactional. An address that is a contact of the project is
 * rendered with its data (and gets working links); any other address renders with no data and
 * does not become a contact. The sender must still be on a verified domain.
 */
export async function queueTestEmail(p: Platform, projectId: string, content: TestContent, email: string, origin: { source: EmailDoc['source']; id: string }) {
  await requireVerifiedSender(p, projectId, content.from);
  const contact = await contacts(p.store).findOne({ projectId, email }, { projection: { _id: 1, data: 1 } });
  const subject = `[TEST] ${content.subject}`;
  // Without a contact the mailer has no links to render with, so the email is rendered here.
  const scope = templateScope({}, { email, id: null });
  const doc: EmailDoc = {
    _id: newId(),
    projectId,
    contactId: contact?._id ?? null,
    kind: 'transactional',
    source: origin.source,
    sourceId: testSourceId(origin.id),
    to: email,
    from: content.from,
    ...(content.fromName ? { fromName: content.fromName } : {}),
    ...(content.replyTo ? { replyTo: content.replyTo } : {}),
    subject: contact ? subject : renderTemplate(subject, scope, 'text'),
    html: contact ? content.body : renderTemplate(content.body, scope, 'html'),
    ...(contact ? { vars: contact.data } : {}),
    headers: { 'X-Mailroom-Test': 'true' },
    status: 'QUEUED',
    createdAt: nowIso(),
  };
  await queueEmails(p, [doc]);
  return { email: doc._id, to: email };
}
