import type { Platform } from '../../runtime/platform.ts';
import { invalid, notFound } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { emails } from './outbound.ts';
import { EMAIL_RESULTS_TOPIC, type EmailResult } from './results.ts';

/**
 * A spam complaint about one of the project's emails: from a feedback report (ARF, RFC 5965),
 * which quotes the original message's headers, or from a relay's webhook naming the email. Our
 * Message-ID is `<emailId@sender domain>`, so the quoted header names the email. The complaint
 * becomes the contact's `email.complaint` event, which unsubscribes it (recorded once).
 */
export async function recordComplaint(p: Platform, projectId: string, input: { emailId?: string; report?: string }) {
  const emailId = input.emailId ?? emailIdInReport(input.report ?? '');
  if (!emailId) throw invalid('report', 'No Message-ID of ours found in the report', 'no_message_id');
  const email = await emails(p).findOne({ _id: emailId, projectId }, { projection: { contactId: 1 } });
  if (!email?.contactId) throw notFound('Email');
  await p.pubsub.publish<EmailResult>(EMAIL_RESULTS_TOPIC, {
    emailId,
    projectId,
    contactId: email.contactId,
    event: 'email.complaint',
    at: nowIso(),
  });
  return { emailId, contactId: email.contactId };
}

/** The email id in the first `Message-ID: <id@domain>` header the report quotes. */
export function emailIdInReport(report: string): string | undefined {
  for (const match of report.matchAll(/^(?:Original-)?Message-ID:[ \t]*(?:\r?\n[ \t]+)?<([^@>\s]+)@[^>\s]+>/gim)) {
    if (/^[0-9a-f-]{36}$/i.test(match[1])) return match[1].toLowerCase();
  }
  return undefined;
}
