import { contactActorClient } from '../../actors/contact/client.ts';
import type { Platform } from '../../runtime/platform.ts';
import { AppError } from '../errors.ts';

/** Outcomes of email, published by the mailer and the tracking endpoints. */
export const EMAIL_RESULTS_TOPIC = 'email.result';

export interface EmailResult {
  emailId: string;
  projectId: string;
  contactId: string;
  event: 'email.sent' | 'email.delivery' | 'email.bounce' | 'email.complaint';
  detail?: string;
  at: string;
}

/** A hard bounce or a complaint unsubscribes the contact (the spec's Events rule 3). */
const UNSUBSCRIBING = new Set<EmailResult['event']>(['email.bounce', 'email.complaint']);

/**
 * Applies outcomes to contacts: each becomes the contact's system event, recorded once however
 * often the message is delivered (its id is derived from the email and the outcome).
 */
export function startEmailResults(p: Platform): void {
  p.pubsub.subscribe<EmailResult>(EMAIL_RESULTS_TOPIC, async (result) => {
    const contact = contactActorClient(p, result.contactId);
    try {
      await contact.recordSystemEvent(result.event, { emailId: result.emailId, ...(result.detail ? { detail: result.detail.slice(0, 500) } : {}) }, `${result.emailId}:${result.event}`);
      if (UNSUBSCRIBING.has(result.event)) await contact.setSubscribed(false);
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') return; // the contact was deleted meanwhile
      throw err;
    }
  });
}
