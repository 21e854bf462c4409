import type { Platform } from '../../runtime/platform.ts';
import { events } from '../events/collection.ts';
import { emails, type EmailDoc } from './outbound.ts';

/** What an email record holds of its recipient: the address, the content rendered for them, the server's replies and reports naming them. */
const PERSONAL = ['to', 'toName', 'subject', 'html', 'text', 'vars', 'headers', 'attachmentsId', 'reason', 'response', 'bounce', 'complaint'] as const satisfies readonly (keyof EmailDoc)[];

/**
 * A deleted contact's emails stay as anonymous history: the address, content, variables,
 * headers and SMTP reply go (GDPR), while status, open and click counters, times and source stay,
 * so a sent campaign's stats do not shrink when contacts go. The contact's events are deleted
 * after this, so a complaint about an email is kept on the email (`complained`).
 */
export async function anonymiseContactEmails(p: Pick<Platform, 'store'>, projectId: string, contactId: string): Promise<void> {
  const owned = { projectId, contactId };
  const complaints = await events(p.store).find({ ...owned, name: 'email.complaint' }, { projection: { data: 1 } });
  const complained = complaints.map((e) => e.data.emailId).filter((id): id is string => typeof id === 'string');
  if (complained.length > 0) await emails(p).updateMany({ ...owned, _id: { $in: complained } }, { $set: { complained: true } });
  // Not sent yet: it never will be (it would leave without an address), as when the mailer finds the contact gone.
  await emails(p).updateMany(
    { ...owned, status: { $in: IN_FLIGHT } },
    { $set: { contactId: null, status: 'FAILED', reason: 'The contact was deleted' }, $unset: unset(PERSONAL.filter((f) => f !== 'reason')) },
  );
  // An email a campaign queues meanwhile keeps its address until the mailer fails it (the contact is gone).
  await emails(p).updateMany({ ...owned, status: { $nin: IN_FLIGHT } }, { $set: { contactId: null }, $unset: unset(PERSONAL) });
}

const IN_FLIGHT = ['QUEUED', 'SENDING'];
const unset = (fields: readonly string[]) => Object.fromEntries(fields.map((field) => [field, '']));
