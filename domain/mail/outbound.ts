import { DuplicateKeyError, type Doc } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { SizedCache } from '../../runtime/sized-cache.ts';
import type { SimpleValue } from '../contacts/schema.ts';
import { newId, nowIso } from '../ids.ts';
import { refusals } from './gate.ts';
import type { BounceDetail } from './results.ts';
import type { SoftFailures } from './soft-bounces.ts';

export const OUTBOUND_TOPIC = 'email.outbound';

export type EmailKind = 'system' | 'transactional' | 'marketing';

/**
 * QUEUED → SENDING (claimed by a mailer; also while a 4xx or an outage is retried; embedded holds
 * the claim in memory, so an attempt under way stays QUEUED: claims.ts, HELD) → DELIVERED (the SMTP
 * server took it) | BOUNCED (5xx, a bounce report, or 4xx until SOFT_BOUNCE_RETRY_HOURS ran out)
 * | FAILED (cannot be sent: sender domain removed, contact deleted, …). Never sent by rule
 * (gate.ts): SKIPPED (a marketing email to an unsubscribed contact), SUPPRESSED (an address on
 * the project's suppression list).
 */
export type EmailStatus = 'QUEUED' | 'SENDING' | 'DELIVERED' | 'BOUNCED' | 'FAILED' | 'SKIPPED' | 'SUPPRESSED';

/** The statuses of an email that may still be sent: every other one is final. */
export const IN_FLIGHT: readonly EmailStatus[] = ['QUEUED', 'SENDING'];

/** One email to one recipient: the unit the mailer sends exactly once. */
export interface EmailDoc extends Doc {
  projectId: string | null;
  contactId: string | null;
  kind: EmailKind;
  /** What asked for it: POST /v1/send, a campaign, a workflow, or the platform itself. */
  source: 'send' | 'campaign' | 'workflow' | 'system';
  sourceId?: string;
  templateId?: string;
  /** The recipient's address; removed, with everything else personal, when the contact is deleted (anonymise.ts). */
  to: string;
  toName?: string;
  from: string;
  fromName?: string;
  replyTo?: string;
  /**
   * Template sources; the mailer renders them with `vars` and the system variables. Inline, or,
   * for content many emails share (a campaign's), in `email_contents` under `contentId`.
   */
  subject?: string;
  html?: string;
  text?: string;
  contentId?: string;
  vars?: Record<string, SimpleValue>;
  headers?: Record<string, string>;
  /** The attachments of the request, stored once for all its recipients. */
  attachmentsId?: string;
  status: EmailStatus;
  reason?: string;
  attempts?: number;
  messageId?: string;
  createdAt: string;
  sentAt?: string;
  deliveredAt?: string;
  /** The relay's last answer about this email (its 250, 4xx or 5xx line). */
  response?: string;
  /** The 4xx answers so far, and when the next try may be made (soft-bounces.ts): while SENDING between tries. */
  softFailures?: SoftFailures;
  retryAt?: string;
  /** The mailer whose attempt it is and until when others keep off (claims.ts): while SENDING. */
  claimedBy?: string;
  claimedUntil?: string;
  /** The bounce: written with BOUNCED by the mailer, or by results.ts for one reported after a 250. */
  bounce?: BounceDetail;
  /**
   * Recorded from the `email.complaint` result (results.ts): what campaign stats count. Outlives
   * the contact (anonymise.ts keeps `at` and drops `detail`), so a sent campaign's stats stay.
   */
  complaint?: { at: string; detail?: string };
}

export interface Attachment {
  filename: string;
  contentType: string;
  /** base64 */
  content: string;
}

export interface OutboundMessage {
  emailId: string;
  /** The email's project (null for the platform's own mail): the mailer takes its send slot before claiming the email. */
  projectId?: string | null;
  /** A try after a soft bounce: the email's `retryAt` when it was handed to the queue (apps/mailer/retries.ts). */
  retryAt?: string;
}

/** The template sources of an email, wherever they are kept. */
export interface EmailContent {
  subject: string;
  html: string;
  text?: string;
}

/**
 * Content many emails share, stored once: a campaign to 100,000 contacts keeps its body once, not
 * in each email record (whose every status change would rewrite it too).
 */
export type EmailContentDoc = Doc & EmailContent & { projectId: string | null };

export const emails = (p: Pick<Platform, 'store'>) => p.store.collection<EmailDoc>('emails');
export const emailContents = (p: Pick<Platform, 'store'>) => p.store.collection<EmailContentDoc>('email_contents');

/** Stores shared content under `id` unless it is there already (the id names the content). */
export async function keepEmailContent(p: Pick<Platform, 'store'>, id: string, content: EmailContentDoc): Promise<void> {
  if (await emailContents(p).findOne({ _id: id }, { projection: { _id: 1 } })) return;
  await emailContents(p).replaceOne({ _id: id }, content, { upsert: true });
}

/**
 * Shared contents as read, by id, the last few read, per store: 64 at most, holding 16 M characters
 * at most (a body can be 512 KB). Never stale: an id names its content (keepEmailContent), which
 * is written once and never changed. The one cache of them: a campaign's body is read for each of
 * its emails, and the store's read-mostly cache (`cacheReads`) would keep a second copy as JSON
 * text, parse it on every hit, and in distributed mode ask every replica to clear it when a
 * campaign's first batch writes its content.
 */
const readContents = new WeakMap<Platform['store'], SizedCache<string, Readonly<EmailContent>>>();
const contentSize = (content: EmailContent) => content.subject.length + content.html.length + (content.text?.length ?? 0);

/** The email's template sources: its own, or the shared content it names (not to be changed). */
export async function contentOf(p: Pick<Platform, 'store'>, email: EmailDoc): Promise<Readonly<EmailContent>> {
  if (email.contentId === undefined) return { subject: email.subject ?? '', html: email.html ?? '', ...(email.text !== undefined ? { text: email.text } : {}) };
  let known = readContents.get(p.store);
  if (!known) readContents.set(p.store, (known = new SizedCache(64, 16 * 1024 * 1024, contentSize)));
  const read = known.get(email.contentId);
  if (read) return read;
  const shared = await emailContents(p).findOne({ _id: email.contentId });
  if (!shared) throw new Error(`the content ${email.contentId} of email ${email._id} is missing`);
  const content = Object.freeze({ subject: shared.subject, html: shared.html, ...(shared.text !== undefined ? { text: shared.text } : {}) });
  known.set(email.contentId, content);
  return content;
}
export const emailAttachments = (p: Pick<Platform, 'store'>) =>
  p.store.collection<{ _id: string; projectId: string | null; items: Attachment[] }>('email_attachments');

export async function ensureEmailIndexes(store: Platform['store']): Promise<void> {
  await store.ensureIndexes('emails', [
    { keys: { projectId: 1, contactId: 1 } },
    // A campaign's emails, and those still in flight (counted before each batch): by status too.
    { keys: { projectId: 1, sourceId: 1, status: 1 } },
    { keys: { attachmentsId: 1 } },
    // Those waiting out a soft bounce whose next try is due (apps/mailer/retries.ts). Not by status
    // as well: retryAt changes for soft bounces only, status for every email (the store leaves an
    // index whose fields a write did not change alone).
    { keys: { retryAt: 1 } },
    // The queue-depth gauge's counts by status (runtime/metrics.ts), and the SENDING emails whose
    // claim's lease has run out (apps/mailer/retries.ts).
    { keys: { status: 1 } },
  ]);
}

/**
 * Accepts emails for sending, the one way any email reaches the mailer: each passes the delivery
 * gate (gate.ts; a refused one is written SUPPRESSED, SKIPPED or FAILED with the reason, and its
 * status in `batch` says so), and every record (and the attachments they share) is written before
 * any is published, so an accepted email is either sent or visibly not.
 *
 * `resumed`: the batch may repeat one a crash cut off (or run twice at once), with the same email
 * ids and `attachmentsId`. The emails written then are left as they are (the mailer owns them),
 * and of those only the ones still QUEUED are published again (the mailer's claim makes a second
 * message a no-op).
 */
export async function queueEmails(
  p: Platform,
  batch: EmailDoc[],
  attachments: Attachment[] = [],
  options: { attachmentsId?: string; resumed?: boolean } = {},
): Promise<void> {
  if (batch.length === 0) return;
  const ids = batch.map((e) => e._id);
  const known = options.resumed
    ? new Map((await emails(p).find(ids.length === 1 ? { _id: ids[0] } : { _id: { $in: ids } }, { projection: { status: 1 } })).map((e) => [e._id, e.status]))
    : new Map<string, EmailStatus>();
  const fresh = batch.filter((e) => !known.has(e._id));
  const refused = await refusals(p, fresh.filter((e) => e.status === 'QUEUED'));
  for (const email of fresh) Object.assign(email, refused.get(email._id));
  for (const email of batch) {
    const stored = known.get(email._id);
    if (stored === 'SKIPPED' || stored === 'SUPPRESSED') email.status = stored; // refused by the run a crash cut off
  }
  if (attachments.length > 0 && batch.some((e) => e.status === 'QUEUED')) {
    const attachmentsId = options.attachmentsId ?? newId();
    // Resumed: the attachments were written before any email, and are gone once those were sent.
    if (fresh.some((e) => e.status === 'QUEUED')) {
      try {
        await emailAttachments(p).insertOne({ _id: attachmentsId, projectId: batch[0].projectId, items: attachments });
      } catch (err) {
        if (!(options.resumed && err instanceof DuplicateKeyError)) throw err;
      }
    }
    for (const email of batch) email.attachmentsId = attachmentsId;
  }
  if (fresh.length > 0) await insertFresh(p, fresh, options.resumed ?? false);
  const queued = batch.filter((email) => (known.get(email._id) ?? email.status) === 'QUEUED');
  await p.pubsub.publishMany<OutboundMessage>(OUTBOUND_TOPIC, queued.map((email) => ({ emailId: email._id, projectId: email.projectId })));
}

/** Writes new email records; a resumed batch tolerates the ones a concurrent run wrote first. */
async function insertFresh(p: Platform, fresh: EmailDoc[], resumed: boolean): Promise<void> {
  try {
    await emails(p).insertMany(fresh);
  } catch (err) {
    if (!(resumed && err instanceof DuplicateKeyError)) throw err;
    for (const email of fresh) {
      try {
        await emails(p).insertOne(email);
      } catch (e) {
        if (!(e instanceof DuplicateKeyError)) throw e;
      }
    }
  }
}

/** The platform's own mail (account verification): same path as product mail, no project. */
export async function enqueueSystemEmail(
  p: Platform,
  message: { to: string; subject: string; html: string; text?: string },
): Promise<string> {
  const email: EmailDoc = {
    _id: newId(),
    projectId: null,
    contactId: null,
    kind: 'system',
    source: 'system',
    from: p.config.systemFrom,
    status: 'QUEUED',
    createdAt: nowIso(),
    ...message,
  };
  await queueEmails(p, [email]);
  return email._id;
}
