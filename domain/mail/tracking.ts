import { createHash } from 'node:crypto';
import { contactActorClient } from '../../actors/contact/client.ts';
import type { Platform } from '../../runtime/platform.ts';
import type { SimpleValue } from '../contacts/schema.ts';
import { AppError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { emails } from './outbound.ts';

/**
 * Opens and clicks: what the tracking pixel and the rewritten links report. Each one is counted
 * on the email record and recorded as the contact's system event (`email.open {emailId}`,
 * `email.click {emailId, url}`), which also keeps the contact's email-activity summary that
 * segments filter on (`email.opened`, `email.clicked`).
 *
 * The counters kept on the email record (campaign stats read them):
 * `opens`/`clicks` count recorded requests; `firstOpenedAt`/`lastOpenedAt` and
 * `firstClickedAt`/`lastClickedAt` say whether and when (an email with `firstOpenedAt` was opened).
 */
export type Engagement = { kind: 'open'; emailId: string } | { kind: 'click'; emailId: string; url: string };

export interface EmailEngagementFields {
  opens?: number;
  clicks?: number;
  firstOpenedAt?: string;
  lastOpenedAt?: string;
  firstClickedAt?: string;
  lastClickedAt?: string;
}

export type EngagementOutcome = 'recorded' | 'repeat' | 'unknown-email' | 'contact-gone';

/**
 * A repeat of the same open (or of a click on the same link) of one email within this window is
 * not recorded again: mail clients and image proxies often fetch twice, and it caps what one
 * valid link can write (one event per window).
 */
export const REPEAT_WINDOW_MS = 5_000;

/** A stored click URL is cut to what an event value may hold. */
const MAX_URL = 10_000;

export interface RetryPolicy {
  /** Delays before the 2nd, 3rd, … attempt of one step; its length + 1 attempts in all. */
  delaysMs: number[];
}

export const DEFAULT_RETRY: RetryPolicy = { delaysMs: [200, 1_000, 5_000] };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function withRetry<T>(policy: RetryPolicy, step: () => Promise<T>, giveUp: (err: unknown) => boolean = () => false): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (giveUp(err) || attempt >= policy.delaysMs.length) throw err;
      await sleep(policy.delaysMs[attempt]);
    }
  }
}

const isNotFound = (err: unknown) => err instanceof AppError && err.code === 'NOT_FOUND';

const repeatKey = (e: Engagement) =>
  e.kind === 'open' ? `open:${e.emailId}` : `click:${e.emailId}:${createHash('sha256').update(e.url).digest('base64url').slice(0, 22)}`;

/**
 * Records one open or click of a known email. Each step is retried on its own (a retried step
 * never repeats an earlier one), and the event has its id before the first attempt, so an actor
 * call whose answer was lost is not recorded twice (a relay's report passes the id it derives
 * from the provider's event). Throws when a step keeps failing.
 */
export async function recordEngagement(p: Platform, e: Engagement, policy: RetryPolicy = DEFAULT_RETRY, eventId = newId()): Promise<EngagementOutcome> {
  // The repeat check comes first: a link fetched over and over costs one limiter call a time.
  let fresh = true;
  try {
    fresh = (await p.limiter.consume(`engagement:${repeatKey(e)}`, 1, REPEAT_WINDOW_MS)).allowed;
  } catch (err) {
    // Without the limiter a repeat may be counted twice; that is better than losing the open.
    p.log.warn({ err, emailId: e.emailId }, 'repeat check of an email open/click failed; recording it anyway');
  }
  if (!fresh) return 'repeat';

  const email = await withRetry(policy, () => emails(p).findOne({ _id: e.emailId }, { projection: { projectId: 1, contactId: 1 } }));
  // Its contact deleted (the record stays, anonymised: mail/anonymise.ts), or a system email.
  if (!email?.contactId || !email.projectId) return 'unknown-email';

  const at = nowIso();
  const counters =
    e.kind === 'open'
      ? { $inc: { opens: 1 }, $min: { firstOpenedAt: at }, $max: { lastOpenedAt: at } }
      : { $inc: { clicks: 1 }, $min: { firstClickedAt: at }, $max: { lastClickedAt: at } };
  await withRetry(policy, () => emails(p).updateOne({ _id: e.emailId }, counters));

  const name = e.kind === 'open' ? 'email.open' : 'email.click';
  const data: Record<string, SimpleValue> = e.kind === 'open' ? { emailId: e.emailId } : { emailId: e.emailId, url: e.url.slice(0, MAX_URL) };
  try {
    await withRetry(policy, () => contactActorClient(p, email.contactId!).recordSystemEvent(name, data, eventId), isNotFound);
  } catch (err) {
    if (isNotFound(err)) return 'contact-gone'; // deleted between the lookup and the event
    throw err;
  }
  return 'recorded';
}

/**
 * Records in the background so the pixel and the redirect answer at once. The promise never
 * rejects: a failure after every retry is logged as an error with the email and the kind (an open
 * or click is never lost silently), and tests may await it.
 */
export function recordInBackground(p: Platform, e: Engagement, policy: RetryPolicy = DEFAULT_RETRY): Promise<EngagementOutcome | 'failed'> {
  return recordEngagement(p, e, policy).then(
    (outcome) => {
      if (outcome === 'unknown-email' || outcome === 'contact-gone') p.log.debug({ emailId: e.emailId, kind: e.kind, outcome }, 'email engagement not recorded');
      return outcome;
    },
    (err: unknown) => {
      p.log.error({ err, emailId: e.emailId, kind: e.kind, ...(e.kind === 'click' ? { url: e.url } : {}) }, `email ${e.kind} could not be recorded`);
      return 'failed' as const;
    },
  );
}
