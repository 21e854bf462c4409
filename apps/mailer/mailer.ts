import CircuitBreaker from 'opossum';
import { footerSettings } from '../../domain/accounts/projects.ts';
import { dkimSigningOf, domainOf, domains, type DomainDoc } from '../../domain/domains/collection.ts';
import { returnPathDomain } from '../../domain/inbound/return-path.ts';
import { attemptEnd, claim, claimable, HELD, heldClaimOf } from '../../domain/mail/claims.ts';
import { refusals } from '../../domain/mail/gate.ts';
import { linkKey } from '../../domain/mail/links.ts';
import { contentOf, emailAttachments, emails, IN_FLIGHT, OUTBOUND_TOPIC, type EmailDoc, type EmailStatus, type OutboundMessage } from '../../domain/mail/outbound.ts';
import { enhancedStatusIn } from '../../domain/mail/enhanced-status.ts';
import { EMAIL_RESULTS_TOPIC, type BounceDetail, type EmailResult } from '../../domain/mail/results.ts';
import { afterSoftFailure } from '../../domain/mail/soft-bounces.ts';
import { nowIso } from '../../domain/ids.ts';
import type { Platform } from '../../runtime/platform.ts';
import { CommittedEmails } from './commit-log.ts';
import { mailerHandlers } from './connections.ts';
import { DeliveryRecords } from './delivery-records.ts';
import type { RenderTask } from './render.ts';
import { startRetrySweep } from './retries.ts';
import { RenderError, SendThreadLost, sendPool, type Sent } from './send-pool.ts';
import { isAnswerAboutTheEmail, smtpFailureOf } from './smtp-answers.ts';

/**
 * The mailer: takes each accepted email from `email.outbound` and hands it to SMTP once.
 * Delivery waits out outages: SMTP errors other than a bounce are retried by redelivery forever
 * (with backoff), while the circuit breaker keeps a dead relay from being hammered. A 4xx for the
 * recipient (smtp-answers.ts) is retried too, within SOFT_BOUNCE_RETRY_HOURS (soft-bounces.ts): the
 * email waits in the store for its next try, which retries.ts hands to the queue.
 */
export function startMailer(p: Platform): { close(): void } {
  const commits = new CommittedEmails(p.config.dataDir);
  const sender = sendPool(p.config, (emailId) => commits.reported(emailId));
  const breaker = new CircuitBreaker((task: RenderTask) => sender.send(task), {
    timeout: 60_000,
    errorThresholdPercentage: 50,
    volumeThreshold: 5,
    resetTimeout: 5_000,
    // Answers about one email (bounces, refusals) say nothing about the relay's health;
    // nor does an email we could not render.
    errorFilter: (err) => err instanceof RenderError || isAnswerAboutTheEmail(err),
  });
  breaker.on('open', () => p.log.warn('SMTP circuit open: holding email until the relay answers'));
  breaker.on('close', () => p.log.info('SMTP circuit closed'));
  p.metrics?.watchCircuit(breaker);

  const mailer: Mailer = { commits, records: new DeliveryRecords(p), sendMail: (task) => breaker.fire(task) };
  p.pubsub.subscribe<OutboundMessage>(OUTBOUND_TOPIC, (message) => deliver(p, mailer, message), {
    retryForever: true,
    concurrency: mailerHandlers(p.config.smtpConnections),
  });
  const stopRetries = startRetrySweep(p, delivering);
  return {
    close() {
      stopRetries();
      breaker.shutdown();
      void sender.close();
    },
  };
}

/** What every delivery of this mailer shares. */
interface Mailer {
  commits: CommittedEmails;
  records: DeliveryRecords;
  sendMail: (task: RenderTask) => Promise<Sent>;
}

/** Emails this process is delivering: a second message for one of them waits for the first. */
const delivering = new Set<string>();

async function deliver(p: Platform, mailer: Mailer, message: OutboundMessage): Promise<void> {
  const { emailId } = message;
  // The claim below also takes a SENDING email (one a crashed mailer left), so two messages for
  // one email must not run at once here; the other one comes back later and finds it done.
  if (delivering.has(emailId)) throw new Error(`email ${emailId} is being delivered already`);
  delivering.add(emailId);
  try {
    await deliverOnce(p, mailer, message);
  } finally {
    delivering.delete(emailId);
  }
}

async function deliverOnce(p: Platform, { commits, records, sendMail }: Mailer, { emailId, projectId, retryAt }: OutboundMessage): Promise<void> {
  // The send slot comes before the claim, so an email waiting for one is still QUEUED: a
  // campaign cancelled meanwhile skips it, and the checks below see an unsubscribe made while it
  // waited. (A message without projectId, from before it was carried, waits after the claim.)
  if (projectId !== undefined) await takeSendSlot(p, projectId);
  const attempt = await claimOf(p, commits.holder, emailId, retryAt);
  if (!attempt) {
    await claimRefused(p, emailId);
    return;
  }
  const { email } = attempt;
  if (commits.has(emailId)) {
    // A mailer died after the whole message went out and before it saw the reply: the server
    // has a complete transaction, and sending again would deliver it twice.
    await finish(p, attempt, 'DELIVERED', { deliveredAt: nowIso(), reason: 'Handed over before a mailer restart' });
    // Its email.sent may be recorded already or not: carried again, recorded once (by its id).
    await publishResult(p, email, 'email.delivery', { sentAt: nowIso() });
    commits.finished(emailId);
    return;
  }

  const check = await stillSendable(p, email);
  if (check.refused) {
    await finish(p, attempt, check.refused.status, { reason: check.refused.reason });
    return;
  }
  if (projectId === undefined) await takeSendSlot(p, email.projectId);

  const key = await linkKey(p);
  const tracked = email.kind !== 'system' && !!email.contactId;
  const attachments = email.attachmentsId ? ((await emailAttachments(p).findOne({ _id: email.attachmentsId }))?.items ?? []) : [];
  // Whether the email gets a footer is footer.ts's to say; the settings are a cached read.
  const project = tracked && email.projectId ? await footerSettings(p, email.projectId) : null;
  // Rendered, signed and sent on a worker thread; what the store said is all it gets.
  const task: RenderTask = {
    email,
    content: await contentOf(p, email),
    ...(tracked ? { links: { publicUrl: p.config.publicUrl, key } } : {}),
    project,
    signing: dkimSigningOf(check.domain),
    attachments,
    bounces: { key, domain: returnPathDomain(check.domain, p.config.inboundHost) },
  };

  // email.sent goes with the SMTP answer (one result, one contact turn), or alone on the first
  // attempt when there is none to wait for (a retry ahead).
  const sentAt = nowIso();
  if (email.attempts === 1) p.metrics?.emailOutcome('sent');
  const sentAlone = () => (email.attempts === 1 ? publishResult(p, email, 'email.sent') : Promise.resolve());
  let sent: Sent;
  try {
    sent = await sendMail(task);
  } catch (err) {
    // Not rendered: tried again later, as a store failure is.
    if (err instanceof RenderError) throw err;
    // The thread's log alone knows whether the server has the message: read the logs again.
    if (err instanceof SendThreadLost) commits.reload();
    const failure = smtpFailureOf(err);
    if (failure.kind === 'refused') {
      // The message or its sender, not the recipient: nothing to bounce, suppress or retry.
      await finish(p, attempt, 'FAILED', { reason: `The relay refused the message: ${failure.response}`, response: failure.response });
      // On any attempt: its only event, recorded once by its id, and an earlier attempt's may
      // have died with its mailer.
      await publishResult(p, email, 'email.sent');
      commits.finished(emailId);
      return;
    }
    const next = failure.kind === 'soft' ? afterSoftFailure(email.softFailures, new Date(), p.config.softBounceRetryHours) : undefined;
    if (failure.kind === 'hard' || next?.kind === 'bounce') {
      // Records email.bounce (hard, or soft once the retry window is over); results.ts does the rest.
      const response = (failure as { response: string }).response;
      const status = enhancedStatusIn(response);
      const bounce: BounceDetail = { type: failure.kind === 'hard' ? 'hard' : 'soft', ...(status ? { status } : {}), diagnostic: response };
      await finish(p, attempt, 'BOUNCED', { reason: response, response, bounce, ...(next ? { softFailures: next.failures } : {}) });
      await publishResult(p, email, 'email.bounce', { detail: response, bounce, sentAt });
      commits.finished(emailId);
      return;
    }
    if (next?.kind === 'retry') {
      // The first try's time stays on the record, so a restart neither resets nor loses the window.
      // (The thread took its commit record back: the server did not keep the message.)
      p.metrics?.emailOutcome('deferred');
      const response = (failure as { response: string }).response;
      p.log.warn({ emailId, attempt: email.attempts, response, retryAt: next.at }, 'email soft-bounced: retrying later');
      await endAttempt(p, attempt, { softFailures: next.failures, retryAt: next.at, response, reason: `Retrying after: ${response}` });
      await sentAlone();
      return; // the message is done: the email waits in the store (retries.ts)
    }
    // Alive to see the failure: the relay did not take the message, so it goes again, by whichever mailer.
    p.metrics?.emailOutcome('deferred');
    p.log.warn({ emailId, attempt: email.attempts, err: (err as Error).message }, 'email deferred: SMTP did not take it; retrying');
    await endAttempt(p, attempt, { reason: `Retrying: ${(err as Error).message}` });
    await sentAlone();
    throw err; // redelivered with backoff; an open breaker fails fast until the relay is back
  }
  if (sent.kept) p.log.info({ to: sent.envelope.to.join(', '), subject: sent.subject, file: sent.kept, text: sent.text }, 'dev outbox: email kept (no SMTP_URL)');
  // Recorded before the email is finished: a crash in between leaves it as claimed (SENDING, or
  // QUEUED after a held claim) with its commit record, and the redelivery finishes it and carries
  // the result again (recorded once).
  await recordDelivery(p, records, email, sentAt);
  await finish(p, attempt, 'DELIVERED', { messageId: sent.messageId, deliveredAt: nowIso(), reason: sent.response, response: sent.response });
  commits.finished(emailId);
}

/** An attempt under way: the email as claimed, and whether the claim is held in memory (claims.ts, HELD). */
interface Attempt {
  email: EmailDoc;
  held: boolean;
}

/**
 * The claim (claims.ts): an email already DELIVERED, BOUNCED, FAILED, SKIPPED or SUPPRESSED is
 * never sent again, one that soft-bounced waits for its next try, whose message (retries.ts) names
 * it, and one another mailer is sending is that mailer's. A QUEUED one is held in memory where
 * this process alone handles the queue (`delivering` keeps a second message off it).
 */
async function claimOf(p: Platform, holder: string, emailId: string, retryAt: string | undefined): Promise<Attempt | null> {
  if (p.pubsub.handledHereOnly) {
    const queued = await emails(p).findOne({ _id: emailId, ...HELD });
    if (queued) return { email: heldClaimOf(queued), held: true };
  }
  const now = new Date();
  const email = await emails(p).findOneAndUpdate(claimable(emailId, holder, now, retryAt), claim(holder, now));
  return email && { email, held: false };
}

/** Writes the attempt's end (claims.ts, attemptEnd): its outcome, or what its next try needs. */
async function endAttempt(p: Platform, { email, held }: Attempt, set: Partial<EmailDoc>): Promise<void> {
  const { from, update } = attemptEnd(email._id, held, set);
  for (const filter of from) if ((await emails(p).updateOne(filter, update)).matched > 0) return;
}

/**
 * A delivery's events, recorded by the mailer itself (delivery-records.ts) rather than through the
 * results queue: the queue's record, delivery and handler run were some 5% of a campaign's event
 * loop (bench/results/campaign-profile.md, session 11). Should that fail (distributed: the store
 * unreachable for a moment), the result takes the queue as before, so sending goes on.
 */
async function recordDelivery(p: Platform, records: DeliveryRecords, email: EmailDoc, sentAt: string): Promise<void> {
  const result = resultOf(email, 'email.delivery', { sentAt });
  if (!result) return;
  try {
    await records.record(result);
  } catch (err) {
    p.log.warn({ emailId: email._id, err: (err as Error).message }, 'delivery not recorded at once: queued');
    await p.pubsub.publish<EmailResult>(EMAIL_RESULTS_TOPIC, result);
  }
}

/**
 * Rules that can change between acceptance and sending: a removed domain, and the delivery gate
 * again (an unsubscribe, a suppression, a deleted contact since the email was accepted).
 */
async function stillSendable(p: Platform, email: EmailDoc): Promise<{ domain: DomainDoc | null; refused?: { status: EmailStatus; reason: string } }> {
  if (email.kind === 'system' || !email.projectId) return { domain: null };
  const domain = await domains(p.store).findOne({ projectId: email.projectId, domain: domainOf(email.from) }, { shared: true });
  if (!domain?.verified) {
    return { domain: null, refused: { status: 'FAILED', reason: `The sender domain ${domainOf(email.from)} is no longer verified on the project` } };
  }
  return { domain, refused: (await refusals(p, [email])).get(email._id) };
}

/** EMAIL_RATE_PER_SECOND per project, shared by every mailer through the rate limiter. */
async function takeSendSlot(p: Platform, projectId: string | null): Promise<void> {
  const limit = p.config.emailRatePerSecond;
  if (limit <= 0) return;
  for (;;) {
    const decision = await p.limiter.consume(`email:${projectId ?? 'system'}`, limit, 1_000);
    if (decision.allowed) return;
    await new Promise((resolve) => setTimeout(resolve, decision.retryAfterMs));
  }
}

async function finish(p: Platform, attempt: Attempt, status: EmailStatus, fields: Partial<EmailDoc>): Promise<void> {
  const { email } = attempt;
  // From the claim's status only: a bounce reported while this attempt ran (a DSN that overtook
  // our write, or a hard one during 4xx retries) claimed the email and stands (bounceVerdict in results.ts).
  await endAttempt(p, attempt, { status, ...fields });
  p.metrics?.emailOutcome(status.toLowerCase() as Lowercase<Exclude<EmailStatus, 'QUEUED' | 'SENDING'>>);
  p.log.info({ emailId: email._id, status, reason: fields.reason }, 'email finished');
  await dropAttachmentsOnceSent(p, email);
}

/** The request's attachments go once no email of it can still be sent. */
async function dropAttachmentsOnceSent(p: Platform, { attachmentsId }: Pick<EmailDoc, 'attachmentsId'>): Promise<void> {
  if (!attachmentsId) return;
  const waiting = await emails(p).countDocuments({ attachmentsId, status: { $in: IN_FLIGHT } });
  if (waiting === 0) await emailAttachments(p).deleteOne({ _id: attachmentsId });
}

type ResultDetail = { detail?: string; bounce?: BounceDetail; sentAt?: string };

/**
 * A message whose claim was refused. For an email another mailer is sending: done, the attempt is
 * that mailer's to end, and should it die, the retry sweep gives the email a message once the
 * lease is over (retries.ts); kept in the queue, the message held one of the Dapr component's few
 * workers through the lease. For one waiting for its next try: done, that try has a message of its
 * own. For a final email: the mailer that finished it may have died before it published the
 * outcome (a bounce, a refusal, a delivery found in the commit log: each is finished first), and
 * its message then comes again. So the outcome is published again; the contact records each event
 * once (by its id), and its consequences (suppression) are idempotent. What came after the finish
 * is done again too: the request's attachments, if it was the last.
 */
async function claimRefused(p: Platform, emailId: string): Promise<void> {
  const projection = { status: 1, projectId: 1, contactId: 1, bounce: 1, response: 1, deliveredAt: 1, attachmentsId: 1 } as const;
  const email = await emails(p).findOne({ _id: emailId }, { projection });
  if (!email || IN_FLIGHT.includes(email.status)) return;
  const outcome = outcomeOf(email);
  if (outcome) await publishResult(p, email, outcome.event, outcome.detail);
  await dropAttachmentsOnceSent(p, email);
}

/** What a final email's outcome was for its contact: none for one never handed to SMTP (refused by the gate, cancelled). */
function outcomeOf(email: Pick<EmailDoc, 'status' | 'bounce' | 'response' | 'deliveredAt'>): { event: EmailResult['event']; detail: ResultDetail } | undefined {
  const sentAt = nowIso();
  if (email.status === 'DELIVERED') return { event: 'email.delivery', detail: { sentAt: email.deliveredAt ?? sentAt } };
  if (email.status === 'BOUNCED' && email.bounce) return { event: 'email.bounce', detail: { detail: email.bounce.diagnostic ?? email.response, bounce: email.bounce, sentAt } };
  if (email.status === 'FAILED' && email.response) return { event: 'email.sent', detail: {} };
  return undefined;
}

async function publishResult(p: Platform, email: EmailDoc, event: EmailResult['event'], extra: ResultDetail = {}): Promise<void> {
  const result = resultOf(email, event, extra);
  if (result) await p.pubsub.publish<EmailResult>(EMAIL_RESULTS_TOPIC, result);
}

/** The email's outcome for its contact; none for the platform's own mail, which has no contact. */
function resultOf(email: EmailDoc, event: EmailResult['event'], { detail, bounce, sentAt }: ResultDetail): EmailResult | undefined {
  if (!email.projectId || !email.contactId) return undefined;
  return {
    emailId: email._id,
    projectId: email.projectId,
    contactId: email.contactId,
    event,
    ...(detail ? { detail } : {}),
    ...(bounce ? { bounce } : {}),
    ...(sentAt ? { sentAt } : {}),
    at: nowIso(),
  };
}
