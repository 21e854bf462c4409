// The delivery gate: the one rule of whether an email may go to its recipient, applied when an
// email is accepted (`queueEmails`) and again by the mailer just before it is sent.
import type { Platform } from '../../runtime/platform.ts';
import { contacts } from '../contacts/collection.ts';
import type { SuppressionDoc } from '../suppressions/collection.ts';
import { suppressedAmong } from '../suppressions/service.ts';
import type { EmailDoc, EmailKind, EmailStatus } from './outbound.ts';

/** Why an email does not go: SUPPRESSED (the address), SKIPPED (the contact's choice), FAILED (gone). */
export interface Refusal {
  status: Extract<EmailStatus, 'SUPPRESSED' | 'SKIPPED' | 'FAILED'>;
  reason: string;
}

/**
 * The rule, as a pure decision. A suppressed address gets no email of any type (a hard bounce
 * or a complaint put it there, or someone by hand); marketing email needs a contact that exists
 * and is subscribed. The platform's own mail (no project) is never refused here.
 */
export function refusalOf(kind: EmailKind, contact: { subscribed: boolean } | null | undefined, suppression: Pick<SuppressionDoc, 'reason'> | undefined): Refusal | undefined {
  if (kind === 'system') return undefined;
  if (suppression) return { status: 'SUPPRESSED', reason: `The address is on the project's suppression list (${suppression.reason.replace('_', ' ')})` };
  if (kind !== 'marketing') return undefined;
  if (!contact) return { status: 'FAILED', reason: 'The contact was deleted' };
  if (!contact.subscribed) return { status: 'SKIPPED', reason: 'The contact is unsubscribed and the email is marketing' };
  return undefined;
}

/**
 * The gate over a batch of emails: what each project's emails need (its suppression list, and the
 * contacts of the marketing ones) in two queries per project, then `refusalOf` for each. A batch
 * is one project's as a rule (a request, a campaign's batch); should it hold several, each email is
 * checked against its own project's list. The platform's own mail (no project) is never refused.
 */
export async function refusals(p: Pick<Platform, 'store'>, batch: readonly EmailDoc[]): Promise<Map<string, Refusal>> {
  const out = new Map<string, Refusal>();
  const byProject = new Map<string, EmailDoc[]>();
  for (const email of batch) {
    if (!email.projectId) continue;
    const emails = byProject.get(email.projectId);
    if (emails) emails.push(email);
    else byProject.set(email.projectId, [email]);
  }
  await Promise.all([...byProject].map(([projectId, emails]) => refuseAmong(p, projectId, emails, out)));
  return out;
}

/** `refusals` for the emails of one project, added to `out`. */
async function refuseAmong(p: Pick<Platform, 'store'>, projectId: string, batch: EmailDoc[], out: Map<string, Refusal>): Promise<void> {
  const marketing = batch.filter((e) => e.kind === 'marketing' && e.contactId).map((e) => e.contactId!);
  const [suppressed, found] = await Promise.all([
    suppressedAmong(p, projectId, batch.map((e) => e.to)),
    marketing.length === 0 ? [] : contacts(p.store).find(marketing.length === 1 ? { _id: marketing[0] } : { _id: { $in: marketing } }, { projection: { subscribed: 1 } }),
  ]);
  const subscribed = new Map(found.map((c) => [c._id, { subscribed: c.subscribed }]));
  for (const email of batch) {
    const refusal = refusalOf(email.kind, email.contactId ? subscribed.get(email.contactId) : null, suppressed.get(email.to.toLowerCase()));
    if (refusal) out.set(email._id, refusal);
  }
}
