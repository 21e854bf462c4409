import { contactActorClient } from '../../actors/contact/client.ts';
import type { Platform } from '../../runtime/platform.ts';
import { splitCallData } from '../contacts/schema.ts';
import { resolveContact } from '../contacts/service.ts';
import { requireVerifiedSender } from '../domains/sender.ts';
import { AppError, invalid } from '../errors.ts';
import type { Attempt } from '../idempotency.ts';
import { derivedId, newId, nowIso } from '../ids.ts';
import { queueEmails, type EmailDoc } from '../mail/outbound.ts';
import { getTemplate } from '../templates/service.ts';
import type { SendInput } from './schema.ts';

/**
 * POST /v1/send: one email per recipient (no recipient sees another), from a verified domain,
 * with the template's fields unless the request overrides them. New contacts are unsubscribed
 * unless `subscribed: true`; a marketing template never reaches an unsubscribed contact.
 * The emails' ids are derived from the attempt's seed, so the take-over of a request a crash cut
 * off finds the emails it queued (and maybe sent) instead of queueing them a second time.
 */
export async function send(p: Platform, projectId: string, input: SendInput, attempt: Attempt = { seed: newId(), resumed: false }) {
  const template = input.template ? await templateFor(p, projectId, input.template) : undefined;
  const subject = input.subject ?? template?.subject;
  const body = input.body ?? template?.body;
  if (!subject) throw invalid('subject', 'subject is required unless a template supplies it', 'required');
  if (!body) throw invalid('body', 'body is required unless a template supplies it', 'required');
  const sender = typeof input.from === 'string' ? { email: input.from, name: undefined } : input.from;
  const from = sender?.email ?? template?.from;
  if (!from) throw invalid('from', 'from is required unless the template has a from address', 'required');
  const fromName = sender?.name ?? input.name ?? template?.fromName ?? undefined;
  const replyTo = input.reply ?? template?.replyTo ?? undefined;
  await requireVerifiedSender(p, projectId, from);

  const kind = template?.type === 'MARKETING' ? 'marketing' : 'transactional';
  const { persistent, transient } = splitCallData(input.data);
  const createdAt = nowIso();
  const batch: EmailDoc[] = [];
  for (const [index, recipient] of recipients(input.to).entries()) {
    const { id, doc } = await resolveContact(p, projectId, recipient.email, input.subscribed ?? false);
    // Persistent data lands on the contact; `subscribed` only ever applied to a new contact.
    const { contact } = await contactActorClient(p, id, doc).upsert({ data: persistent });
    batch.push({
      _id: derivedId('send', attempt.seed, String(index)),
      projectId,
      contactId: id,
      kind,
      source: 'send',
      ...(template ? { templateId: template.id } : {}),
      to: recipient.email,
      ...(recipient.name ? { toName: recipient.name } : {}),
      from,
      ...(fromName ? { fromName } : {}),
      ...(replyTo ? { replyTo } : {}),
      subject,
      html: body,
      vars: { ...contact!.data, ...transient },
      ...(input.headers ? { headers: input.headers } : {}),
      status: 'QUEUED',
      createdAt,
    });
  }
  await queueEmails(p, batch, input.attachments ?? [], { attachmentsId: derivedId('send-attachments', attempt.seed), resumed: attempt.resumed });
  return {
    emails: batch.map((e) => ({ contact: { id: e.contactId!, email: e.to }, email: e._id, status: e.status as 'QUEUED' | 'SKIPPED' | 'SUPPRESSED' })),
    timestamp: createdAt,
  };
}

/** A template id in the body that names nothing is a bad field, not a missing page. */
async function templateFor(p: Platform, projectId: string, id: string) {
  try {
    return await getTemplate(p, projectId, id);
  } catch (err) {
    if (err instanceof AppError && err.code === 'NOT_FOUND') throw invalid('template', 'No template with this id in the project', 'not_found');
    throw err;
  }
}

/** `to` as given: a string, an object or a list of either; an address listed twice gets one email. */
function recipients(to: SendInput['to']): { email: string; name?: string }[] {
  const list = (Array.isArray(to) ? to : [to]).map((r) => (typeof r === 'string' ? { email: r } : r));
  const seen = new Set<string>();
  return list.filter((r) => !seen.has(r.email) && seen.add(r.email));
}
