/**
 * What a failed SMTP transaction means, from nodemailer's error (`responseCode`, and `command`:
 * the step that failed).
 * - `hard`: a 5xx, the receiving side's final word on this message (a bounce, not an outage).
 * - `soft`: a 4xx to RCPT TO or DATA, an answer about this recipient or this message ("mailbox
 *   full", greylisting): retried within SOFT_BOUNCE_RETRY_HOURS, then a soft bounce.
 * - `outage`: anything else: no connection, a timeout, a greeting or MAIL FROM refused, a 421
 *   ("service not available", whatever the step). The relay is unwell, not the recipient: retried
 *   until it is back, and counted by the circuit breaker.
 */
export type SmtpFailure = { kind: 'hard' | 'soft'; response: string } | { kind: 'outage' };

const PER_MESSAGE_COMMANDS = new Set(['RCPT TO', 'DATA']);

export function smtpFailureOf(err: unknown): SmtpFailure {
  const { responseCode: code, command, response } = err as { responseCode?: number; command?: string; response?: string };
  if (typeof code !== 'number') return { kind: 'outage' };
  const answer = response ?? (err as Error).message;
  if (code >= 500 && code < 600) return { kind: 'hard', response: answer };
  if (code >= 400 && code < 500 && code !== 421 && command !== undefined && PER_MESSAGE_COMMANDS.has(command)) return { kind: 'soft', response: answer };
  return { kind: 'outage' };
}

/** The breaker's filter: a bounce, hard or soft, says nothing about the relay's health. */
export const isRecipientAnswer = (err: unknown) => smtpFailureOf(err).kind !== 'outage';
