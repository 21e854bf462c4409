import { nowIso } from '../../domain/ids.ts';
import { emails, OUTBOUND_TOPIC, type OutboundMessage } from '../../domain/mail/outbound.ts';
import { RETRY_LEASE_MS, retrySweepMs } from '../../domain/mail/soft-bounces.ts';
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
 */
export function startRetrySweep(p: Platform): () => void {
  return startPeriodic(
    retrySweepMs(p.config.softBounceRetryHours),
    () => sweepDueRetries(p),
    (err) => p.log.warn({ err }, 'the sweep for soft-bounce retries failed; the next sweep tries again'),
  );
}

/** One sweep: leases the due emails (up to SWEEP_BATCH), then publishes their messages in one go. */
export async function sweepDueRetries(p: Platform): Promise<void> {
  // Served by the emails' {retryAt} index (outbound.ts): those with a try due, whose status is tested.
  const due = await emails(p).find({ status: 'SENDING', retryAt: { $lte: nowIso() } }, { projection: { projectId: 1, retryAt: 1 }, limit: SWEEP_BATCH });
  const leased: OutboundMessage[] = [];
  for (const email of due) {
    const lease = new Date(Date.now() + RETRY_LEASE_MS).toISOString();
    const { modified } = await emails(p).updateOne({ _id: email._id, status: 'SENDING', retryAt: email.retryAt }, { $set: { retryAt: lease } });
    if (modified === 1) leased.push({ emailId: email._id, projectId: email.projectId, retryAt: lease });
  }
  // A crash before this leaves the leases to run out: the next sweep after them publishes again.
  await p.pubsub.publishMany(OUTBOUND_TOPIC, leased);
}
