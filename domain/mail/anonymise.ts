import type { Platform } from '../../runtime/platform.ts';
import { emails, IN_FLIGHT, type EmailDoc } from './outbound.ts';

/** What an email record holds of its recipient: the address, the content rendered for them, the server's replies and reports naming them. */
const PERSONAL = ['to', 'toName', 'subject', 'html', 'text', 'vars', 'headers', 'attachmentsId', 'reason', 'response', 'bounce', 'complaint.detail'] as const satisfies readonly (keyof EmailDoc | `complaint.${string}`)[];

/**
 * A deleted contact's emails stay as anonymous history: the address, content, variables,
 * headers, SMTP reply and report details go (GDPR), while status, open and click counters, the
 * complaint's time, times and source stay, so a sent campaign's stats do not shrink when contacts go.
 */
export async function anonymiseContactEmails(p: Pick<Platform, 'store'>, projectId: string, contactId: string): Promise<void> {
  const owned = { projectId, contactId };
  // Not sent yet: it never will be (it would leave without an address), as when the mailer finds the contact gone.
  await emails(p).updateMany(
    { ...owned, status: { $in: IN_FLIGHT } },
    { $set: { contactId: null, status: 'FAILED', reason: 'The contact was deleted' }, $unset: unset(PERSONAL.filter((f) => f !== 'reason')) },
  );
  // An email a campaign queues meanwhile keeps its address until the mailer fails it (the contact is gone).
  await emails(p).updateMany({ ...owned, status: { $nin: IN_FLIGHT } }, { $set: { contactId: null }, $unset: unset(PERSONAL) });
}

const unset = (fields: readonly string[]) => Object.fromEntries(fields.map((field) => [field, '']));
