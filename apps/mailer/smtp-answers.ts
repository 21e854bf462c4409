import { enhancedStatusIn, refusesTheMessage } from '../../domain/mail/enhanced-status.ts';

/**
 * What a failed SMTP transaction means, from nodemailer's error (`responseCode`, and `command`:
 * the step that failed; our own client's errors carry the same fields).
 * - `hard`: a 5xx to RCPT TO or DATA about the address or the mailbox (`5.1.1`, or no status):
 *   a hard bounce, which suppresses the address and unsubscribes the contact.
 * - `soft`: a 4xx to RCPT TO or DATA, an answer about this recipient or this message ("mailbox
 *   full", greylisting): retried within SOFT_BOUNCE_RETRY_HOURS, then a soft bounce.
 * - `refused`: the message or its sender refused, whatever the recipient: a 5xx to MAIL FROM (the
 *   project's sending address), too big (`5.3.4`, a 552 to DATA without a status, or nodemailer's
 *   own check of the relay's SIZE), or a 5xx to RCPT TO or DATA whose status says the message was
 *   refused, not the address (refusesTheMessage: relaying denied, blocked, rejected as spam). The
 *   answer comes from our relay, whose policy is about us: counted against the recipient, a
 *   relay refusing relaying would bounce (or, as repeated soft bounces, suppress) a whole
 *   audience. The email FAILED with the relay's words; no bounce, nothing suppressed.
 * - `outage`: anything else: no connection, a timeout, a greeting, EHLO or AUTH refused (a wrong
 *   password must not bounce a whole audience), a 4xx to MAIL FROM, a 421 ("service not
 *   available", whatever the step). The relay is unwell or misconfigured, not the recipient:
 *   retried until it is back, and counted by the circuit breaker.
 */
export type SmtpFailure = { kind: 'hard' | 'soft' | 'refused'; response: string } | { kind: 'outage' };

const PER_MESSAGE_COMMANDS = new Set(['RCPT TO', 'DATA']);

/** nodemailer refuses a message larger than the relay's EHLO SIZE before sending it, with no reply code. */
const OVER_SIZE = /^Message size larger than allowed/;

export function smtpFailureOf(err: unknown): SmtpFailure {
  const { responseCode: code, command, response, message } = err as { responseCode?: number; command?: string; response?: string; message?: string };
  if (typeof code !== 'number') return typeof message === 'string' && OVER_SIZE.test(message) ? { kind: 'refused', response: message } : { kind: 'outage' };
  const answer = response ?? message ?? String(code);
  const status = enhancedStatusIn(answer);
  const perMessage = command !== undefined && PER_MESSAGE_COMMANDS.has(command);
  if (code >= 500 && code < 600) {
    if (command === 'MAIL FROM') return { kind: 'refused', response: answer };
    if (!perMessage) return { kind: 'outage' };
    // 552 without a status after the message is its size; to RCPT TO it is often a full mailbox.
    const refused = refusesTheMessage(status) || (code === 552 && !status && command === 'DATA');
    return { kind: refused ? 'refused' : 'hard', response: answer };
  }
  if (code >= 400 && code < 500 && code !== 421 && perMessage) return { kind: 'soft', response: answer };
  return { kind: 'outage' };
}

/** The email's last answer (its status is final, the commit record stays): all but a 4xx and an outage. */
export const isFinalAnswer = (failure: SmtpFailure) => failure.kind !== 'soft' && failure.kind !== 'outage';

/** The breaker's filter: an answer about this email (a bounce, a refusal) says nothing about the relay's health. */
export const isAnswerAboutTheEmail = (err: unknown) => smtpFailureOf(err).kind !== 'outage';
