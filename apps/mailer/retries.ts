import { lapsed, RELEASED } from '../../domain/mail/claims.ts';
import { emails, OUTBOUND_TOPIC, type OutboundMessage } from '../../domain/mail/outbound.ts';
import { RETRY_LEASE_MS, retrySweepMs } from '../../domain/mail/soft-bounces.ts';
import type { Filter } from '../../ports/store.ts';
import { startPeriodic } from '../../runtime/periodic.ts';
import type { Platform } from '../../runtime/platform.ts';

/** Due emails handed to the queue by one sweep at most; the next sweep takes the rest. */
const SWEEP_BATCH = 500;

/**
 * An email waiting out a soft bounce waits in the store, not in the queue: the mailer finishes its
 * message once the email's `retryAt` is written, and this sweep hands the email to the queue again
 * once that is due. Kept in the queue, a waiting message held one of the Dapr component's few
 * workers for the whole wait (docs/decisions.md, "Redelivery on Dapr").
 *
 * A due email is leased before it is published: its `retryAt` moves RETRY_LEASE_MS ahead, and the
 * message carries that value, which the mailer's claim asks for. A message lost after the lease is
 * made up for once the lease runs out; of two leases of one email (two mailers sweeping at once),
 * the later one's message is the one the claim lets through.
 *
 * A claim whose lease ran out (claims.ts: its mailer died mid-attempt) becomes such a due try too,
 * leased and published the same way. Its own message may be gone: a mailer refused by another's
 * live claim finishes the message (mailer.ts, claimRefused), and Redis may have lost it. The
 * sweep passes over `delivering`, this process's attempts under way: one may outlive its lease.
 */
export function startRetrySweep(p: Platform, delivering: ReadonlySet<string>): () => void {
  return startPeriodic(
    retrySweepMs(p.config.softBounceRetryHours),
    () => sweepDueRetries(p, delivering),
    (err) => p.log.warn({ err }, 'the sweep for soft-bounce retries failed; the next sweep tries again'),
  );
}

/** One sweep: leases the due emails and the lapsed claims (up to SWEEP_BATCH each), then publishes their messages in one go. */
export async function sweepDueRetries(p: Platform, delivering: ReadonlySet<string> = new Set()): Promise<void> {
  const now = new Date();
  const leased: OutboundMessage[] = [];
  // `as`: the email as read, so that of two sweeps at once only one leases it.
  const lease = async (email: { _id: string; projectId: string | null }, as: Filter, unset?: typeof RELEASED) => {
    const retryAt = new Date(Date.now() + RETRY_LEASE_MS).toISOString();
    const { modified } = await emails(p).updateOne({ _id: email._id, ...as }, { $set: { retryAt }, ...(unset ? { $unset: unset } : {}) });
    if (modified === 1) leased.push({ emailId: email._id, projectId: email.projectId, retryAt });
  };
  // Served by the emails' {retryAt} index (outbound.ts): those with a try due, whose status is tested.
  const due = await emails(p).find({ status: 'SENDING', retryAt: { $lte: now.toISOString() } }, { projection: { projectId: 1, retryAt: 1 }, limit: SWEEP_BATCH });
  for (const email of due) await lease(email, { status: 'SENDING', retryAt: email.retryAt });
  // Served by the emails' {status} index: the SENDING ones (at most the mailers' attempts in flight
  // and the soft bounces' waits), whose leases are tested.
  const abandoned = await emails(p).find(lapsed(now), { projection: { projectId: 1, claimedUntil: 1 }, limit: SWEEP_BATCH });
  for (const email of abandoned) if (!delivering.has(email._id)) await lease(email, { ...lapsed(now), claimedUntil: email.claimedUntil }, RELEASED);
  // A crash before this leaves the leases to run out: the next sweep after them publishes again.
  await p.pubsub.publishMany(OUTBOUND_TOPIC, leased);
}
