import type { Filter, Update } from '../../ports/store.ts';

/**
 * How long a mailer's claim on an email keeps other mailers off it: an attempt's SMTP send times
 * out after a minute (apps/mailer/mailer.ts), and a minute more is left for its store writes, so
 * only a mailer gone or stuck loses it. Not longer: a mailer replica that dies leaves its claims
 * (as many as its pub/sub concurrency, 10 on Dapr) unsent until their leases are over.
 */
export const CLAIM_LEASE_MS = 2 * 60_000;

/** An attempt under way, or one a mailer died in (not a soft bounce's wait for its next try). */
const SENDING = { status: 'SENDING', retryAt: { $exists: false } } as const;

/**
 * Which email a message for `emailId` may claim for an attempt (apps/mailer/mailer.ts). A QUEUED
 * one; a SENDING one (an attempt under way, or one a mailer died in) only
 * - with its due retry's message (`retryAt`, the lease retries.ts gave the message);
 * - for the mailer that claimed it (`holder`): after a restart, its commit log says whether the
 *   message went out (the one process guards against itself: a set of the emails it delivers);
 * - for any mailer once the claim's lease has run out (or on a claim from before the lease).
 * Without the lease, a second message for an email another mailer was sending (Dapr redelivers a
 * message still handled after its processingTimeout; a campaign batch run again publishes its
 * QUEUED emails again; a retry's older lease) was claimed on a second mailer too, and sent twice.
 */
export function claimable(emailId: string, holder: string, now: Date, retryAt?: string): Filter {
  return {
    _id: emailId,
    $or: [
      { status: 'QUEUED' },
      ...(retryAt ? [{ status: 'SENDING', retryAt }] : []),
      { ...SENDING, claimedBy: holder },
      { ...SENDING, claimedUntil: { $exists: false } },
      lapsed(now),
    ],
  };
}

/**
 * A SENDING email whose claim's lease has run out: its mailer died (or is stuck past its SMTP
 * timeout) and never ended the attempt. Any message for it claims it; the retry sweep
 * (apps/mailer/retries.ts) gives it a message of its own, should no other come.
 */
export const lapsed = (now: Date): Filter => ({ ...SENDING, claimedUntil: { $lt: now.toISOString() } });

/** The claim itself: the attempt counted, the retry's time spent, the lease this mailer's. */
export const claim = (holder: string, now: Date): Update => ({
  $set: { status: 'SENDING', claimedBy: holder, claimedUntil: new Date(now.getTime() + CLAIM_LEASE_MS).toISOString() },
  $unset: { retryAt: '' },
  $inc: { attempts: 1 },
});

/** What an attempt's end takes off the email (finished, or to be tried again by any mailer). */
export const RELEASED = { claimedBy: '', claimedUntil: '' } as const;

/**
 * A claim held in memory instead of written, where this process alone handles the queue's messages
 * (embedded: the mailer's set of emails it is delivering keeps a second message off, and its
 * commit log says after a crash whether the server has the message). Only a QUEUED email's: one
 * SENDING (retried, or left by a crash) is claimed as above. The claim is then written with the
 * attempt's end, one write instead of two: 0.90–0.96× the CPU of a relay-signed campaign email
 * (bench/results/campaign-profile.md, session 43; docs/decisions.md says what it changes).
 */
export const HELD = { status: 'QUEUED' } as const;

/** The email as a held claim takes it: the attempt counted, as `claim` writes it (and `attemptEnd` after a held one). */
export const heldClaimOf = <E extends { attempts?: number }>(email: E): E => ({ ...email, attempts: (email.attempts ?? 0) + 1 });

/**
 * How an attempt's end (`set`: its outcome's fields, and `status` unless it is tried again) is
 * written: from the first of `from` the email is found in.
 * - After a written claim: from SENDING, the claim taken off.
 * - After a held one: from QUEUED, with what the claim would have written (the attempt counted;
 *   SENDING while tried again). Or from the SKIPPED a campaign's cancel wrote while the email was
 *   in hand, which a written claim would have kept off: the attempt went on, and its outcome is
 *   what happened to the email.
 */
export function attemptEnd(emailId: string, held: boolean, set: Record<string, unknown>): { from: Filter[]; update: Update } {
  if (!held) return { from: [{ _id: emailId, status: 'SENDING' }], update: { $set: set, $unset: RELEASED } };
  // Each an equality, tried in turn (the cancel's is rare): the store decides it without a matcher.
  return { from: [{ _id: emailId, ...HELD }, { _id: emailId, status: 'SKIPPED' }], update: { $set: { status: 'SENDING', ...set }, $inc: { attempts: 1 } } };
}
