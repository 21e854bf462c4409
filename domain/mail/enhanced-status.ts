/**
 * Enhanced mail system status codes (RFC 3463, `class.subject.detail`, e.g. `5.1.1`) and what a
 * permanent one says about the recipient. Pure, with no imports: the mailer's sending threads
 * load it too.
 */

/** The first enhanced status code in a reply or diagnostic (`550 5.1.1 no such user` → `5.1.1`). */
export function enhancedStatusIn(text: string): string | undefined {
  return /(?:^|[\s(])([245]\.\d{1,3}\.\d{1,3})(?=[\s).;:,]|$)/.exec(text)?.[1];
}

/**
 * Whether a failure's status is about the message or the sender rather than the address: the
 * subjects X.3 (the receiving system: 5.3.4 message too big), X.6 (the content) and X.7 (policy:
 * blocked, rejected as spam, DMARC, relaying denied). Such a permanent failure is no reason to
 * suppress the address and unsubscribe the contact (at send time the email FAILED; in a bounce
 * report, a soft bounce); X.1 (the address), X.2 (the mailbox), X.4, X.5 and a failure without a
 * status are.
 */
export function refusesTheMessage(status: string | undefined): boolean {
  return status !== undefined && /^\d\.[367]\./.test(status);
}
