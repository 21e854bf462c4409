import type { SystemEvent } from '../../actors/contact/behaviour.ts';
import { contactActorClient } from '../../actors/contact/client.ts';
import { recordSystemEvents, type SystemEventsFor } from '../../actors/contact/system-events.ts';
import type { Platform } from '../../runtime/platform.ts';
import { AppError } from '../errors.ts';
import type { SuppressionReason } from '../suppressions/collection.ts';
import { suppress } from '../suppressions/service.ts';
import { events } from '../events/collection.ts';
import { emails, type EmailStatus } from './outbound.ts';
import { RELEASED } from './claims.ts';
import { softBouncesSuppress, softBounceWindowStart, type SoftBounceLimit } from './soft-bounces.ts';

/** Outcomes of email, published by the mailer, the inbound listener, relay webhooks and the tracking endpoints. */
export const EMAIL_RESULTS_TOPIC = 'email.result';

/** What a bounce says: hard (5.x.x, the address is gone) or soft (4.x.x, it may work later). */
export interface BounceDetail {
  type: 'hard' | 'soft';
  /** The enhanced status code (RFC 3463), e.g. `5.1.1`, when the answer carried one. */
  status?: string;
  /** The receiving server's words (SMTP reply or DSN Diagnostic-Code). */
  diagnostic?: string;
}

export interface EmailResult {
  emailId: string;
  projectId: string;
  contactId: string;
  event: 'email.sent' | 'email.delivery' | 'email.bounce' | 'email.complaint';
  detail?: string;
  /** For `email.bounce`; a bounce without it is hard (a 5xx at send time, as before it was carried). */
  bounce?: BounceDetail;
  at: string;
  /**
   * The mailer's answer from SMTP (`email.delivery`, or `email.bounce` at send time): when it
   * handed the message over. `email.sent` is recorded with the outcome, in the same contact turn
   * and write, unless it is recorded already (a retry's earlier attempt, a redelivery).
   */
  sentAt?: string;
}

/**
 * What an outcome does beyond its event: a hard bounce or a complaint unsubscribes the contact
 * (the spec's Events rule 3) and puts the address on the project's suppression list, so no email
 * of any type goes there again. A soft bounce does neither, unless the contact had `limit.count`
 * of them within the window (`softBounces`, this one included): then it counts as a hard one.
 */
export function consequenceOf(
  result: Pick<EmailResult, 'event' | 'bounce'>,
  softBounces = 0,
  limit: SoftBounceLimit = { count: 0, windowDays: 1 },
): SuppressionReason | undefined {
  if (result.event === 'email.complaint') return 'complaint';
  if (result.event !== 'email.bounce') return undefined;
  if (result.bounce?.type !== 'soft') return 'hard_bounce';
  return softBouncesSuppress(softBounces, limit) ? 'soft_bounces' : undefined;
}

/**
 * One final bounce per email, the first: whether a reported bounce is the email's.
 * - `claim`: the email has no final outcome yet (being sent, retried after 4xx answers, or taken
 *   by a relay, DELIVERED): this bounce becomes it, hard or soft (so a hard report ends a 4xx
 *   retry, which was not final).
 * - `continue`: the email bounced with this very bounce (the mailer writes its own with the
 *   BOUNCED status; a redelivery after a crash finds its claim): record its event and consequences.
 * - `ignore`: the email already bounced otherwise (a hard report after the final soft bounce, a
 *   late soft one after a hard bounce), or was never sent: nothing is recorded.
 */
export function bounceVerdict(email: { status: EmailStatus; bounce?: BounceDetail }, bounce: BounceDetail): 'claim' | 'continue' | 'ignore' {
  // QUEUED too: a report names an email only by what its message carried (the return path we
  // signed, our Message-ID in a relay's signed report), so it was handed over, by a mailer that
  // holds its claim in memory (claims.ts, HELD) or before a crash.
  if (email.status === 'QUEUED' || email.status === 'SENDING' || email.status === 'DELIVERED') return 'claim';
  if (email.status !== 'BOUNCED') return 'ignore';
  // A BOUNCED email without its bounce was written before the detail was kept: as its own.
  if (!email.bounce) return 'continue';
  return email.bounce.type === bounce.type && email.bounce.status === bounce.status ? 'continue' : 'ignore';
}

/**
 * Applies outcomes to contacts: each becomes the contact's system event, recorded once however
 * often the message is delivered (its id is derived from the email and the outcome).
 */
export function startEmailResults(p: Platform): void {
  p.pubsub.subscribe<EmailResult>(EMAIL_RESULTS_TOPIC, (result) => applyEmailResult(p, result));
}

/**
 * One outcome applied: what the topic's handler does with each message, and what the mailer does
 * with a delivery itself (mailer.ts). Idempotent: applied twice, it records and counts once.
 */
export async function applyEmailResult(p: Platform, result: EmailResult): Promise<void> {
  const limit: SoftBounceLimit = { count: p.config.softBounceSuppressCount, windowDays: p.config.softBounceWindowDays };
  if (result.event === 'email.bounce' && !(await claimBounce(p, result))) {
    // Another bounce is the email's (a report overtook the mailer's answer): it was sent all the same.
    if (result.sentAt) await recordSystemEvents(p, [systemEventsOf(result, 'email.sent')]);
    return;
  }
  if (result.event === 'email.complaint') await recordComplaint(p, result);
  const known = consequenceOf(result);
  // First the list (idempotent): a redelivery after a crash between the two still suppresses.
  if (known) await suppressRecipient(p, result, known);
  const [recorded] = await recordSystemEvents(p, [systemEventsOf(result)]);
  if (recorded.gone) return; // the contact was deleted meanwhile
  // Soft bounces are counted once this one is recorded: of several at once, the last recorded
  // sees them all (a redelivery counts the same).
  const suppression = known ?? (isSoft(result) && limit.count > 0 ? consequenceOf(result, await softBouncesWithin(p, result, limit), limit) : undefined);
  if (suppression && !known) await suppressRecipient(p, result, suppression);
  if (suppression) {
    try {
      await contactActorClient(p, result.contactId).setSubscribed(false);
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'NOT_FOUND')) throw err; // deleted meanwhile
    }
  }
}

/**
 * The contact's events for a result: its outcome, after `email.sent` when the result carries the
 * SMTP answer's time (`only`: just that one). Their ids are the email's and the event's, so each
 * is recorded once however often the result comes; each has its own time (a repeat then changes
 * none of the contact's).
 */
export function systemEventsOf(result: EmailResult, only?: 'email.sent'): SystemEventsFor {
  const { emailId, projectId, contactId, sentAt } = result;
  const sent: SystemEvent[] = sentAt ? [{ name: 'email.sent', data: { emailId }, eventId: `${emailId}:email.sent`, at: sentAt }] : [];
  const outcome: SystemEvent = { name: result.event, data: eventData(result), eventId: `${emailId}:${result.event}`, at: result.at };
  return { projectId, contactId, events: only ? sent : [...sent, outcome] };
}

const isSoft = (result: EmailResult) => result.event === 'email.bounce' && result.bounce?.type === 'soft';

/** The contact's soft bounces within the window, this one's included. */
function softBouncesWithin(p: Platform, result: EmailResult, limit: SoftBounceLimit): Promise<number> {
  return events(p.store).countDocuments({
    projectId: result.projectId,
    contactId: result.contactId,
    createdAt: { $gte: softBounceWindowStart(limit, result.at) },
    name: 'email.bounce',
    'data.type': 'soft',
  });
}

/** The bounce as GET /emails/:id shows it; a result without one is a 5xx at send time (hard). */
function bounceOnRecord(result: EmailResult): BounceDetail {
  const diagnostic = result.bounce?.diagnostic ?? result.detail;
  return { type: result.bounce?.type ?? 'hard', ...(result.bounce?.status ? { status: result.bounce.status } : {}), ...(diagnostic ? { diagnostic: diagnostic.slice(0, 1000) } : {}) };
}

/**
 * Makes the bounce the email's (bounceVerdict): a bounce reported after the relay took the
 * message (a DSN, a relay's webhook) turns the email BOUNCED with its detail, as the mailer does
 * for one at send time. The update is conditional on the status read, so of two reports at once
 * one claims and the other is judged again against it. False: this bounce is not recorded.
 */
async function claimBounce(p: Platform, result: EmailResult): Promise<boolean> {
  const bounce = bounceOnRecord(result);
  for (let tries = 0; tries < 3; tries++) {
    const email = await emails(p).findOne({ _id: result.emailId, projectId: result.projectId }, { projection: { status: 1, bounce: 1 } });
    if (!email) return false;
    const verdict = bounceVerdict(email, bounce);
    if (verdict !== 'claim') return verdict === 'continue';
    // A try it was waiting for after 4xx answers is off (and out of the sweep's index), and a mailer's claim over.
    const claimed = await emails(p).updateOne({ _id: result.emailId, status: email.status }, { $set: { status: 'BOUNCED', bounce }, $unset: { retryAt: '', ...RELEASED } });
    if (claimed.modified === 1) return true;
  }
  return false;
}

/** What GET /emails/:id shows of a complaint. */
async function recordComplaint(p: Platform, result: EmailResult): Promise<void> {
  await emails(p).updateOne(
    { _id: result.emailId, projectId: result.projectId },
    { $set: { complaint: { at: result.at, ...(result.detail ? { detail: result.detail.slice(0, 1000) } : {}) } } },
  );
}

function eventData(result: EmailResult) {
  return {
    emailId: result.emailId,
    ...(result.detail ? { detail: result.detail.slice(0, 500) } : {}),
    ...(result.bounce ? { type: result.bounce.type, ...(result.bounce.status ? { status: result.bounce.status } : {}) } : {}),
  };
}

async function suppressRecipient(p: Platform, result: EmailResult, reason: SuppressionReason): Promise<void> {
  const email = await emails(p).findOne({ _id: result.emailId }, { projection: { to: 1, projectId: 1 } });
  if (!email?.to || email.projectId !== result.projectId) return; // anonymised with its deleted contact
  const detail = result.bounce ? [result.bounce.status, result.bounce.diagnostic ?? result.detail].filter(Boolean).join(' ') : (result.detail ?? null);
  await suppress(p, result.projectId, email.to, { reason, detail, emailId: result.emailId });
}
