import type { Platform } from '../../runtime/platform.ts';
import { nowIso } from '../ids.ts';
import { emailIdInReport } from '../mail/complaints.ts';
import { emails } from '../mail/outbound.ts';
import { EMAIL_RESULTS_TOPIC, type EmailResult } from '../mail/results.ts';
import { bounceOf, type Report } from './reports.ts';

/**
 * A report delivered to an email's Return-Path, or a feedback report to the feedback loop address
 * (which names the email by the Message-ID it quotes): records `email.bounce` (hard: suppressed;
 * final soft: not) or `email.complaint` (suppressed) through `email.result`, whose handler also
 * marks a DELIVERED email BOUNCED (results.ts). A delay warning, an auto-reply or a report about an email we do not know does nothing.
 * Returns what it recorded, for the log.
 */
export async function applyReport(
  p: Platform,
  report: Report,
  about: { emailId: string } | { quoted: string },
): Promise<'bounce' | 'complaint' | 'nothing'> {
  const emailId = 'emailId' in about ? about.emailId : report.kind === 'feedback' ? emailIdInReport(about.quoted) : undefined;
  if (!emailId) return 'nothing';
  const bounce = bounceOf(report);
  if (!bounce && report.kind !== 'feedback') return 'nothing';
  const email = await emails(p).findOne({ _id: emailId }, { projection: { projectId: 1, contactId: 1, status: 1 } });
  if (!email?.projectId || !email.contactId) return 'nothing'; // the platform's own mail, or anonymised
  if (bounce) {
    await publish(p, { emailId, projectId: email.projectId, contactId: email.contactId, event: 'email.bounce', bounce, ...(bounce.diagnostic ? { detail: bounce.diagnostic } : {}) });
    return 'bounce';
  }
  await publish(p, { emailId, projectId: email.projectId, contactId: email.contactId, event: 'email.complaint' });
  return 'complaint';
}

const publish = (p: Platform, result: Omit<EmailResult, 'at'>) => p.pubsub.publish<EmailResult>(EMAIL_RESULTS_TOPIC, { ...result, at: nowIso() });
