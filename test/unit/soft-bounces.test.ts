import { describe, expect, it } from 'vitest';
import { smtpFailureOf } from '../../apps/mailer/smtp-answers.ts';
import { bounceVerdict, consequenceOf } from '../../domain/mail/results.ts';
import { afterSoftFailure, retrySweepMs, softBounceWindowStart } from '../../domain/mail/soft-bounces.ts';
import { loadConfig } from '../../runtime/config.ts';

/** An error as nodemailer's SMTP connection makes it: `response` the server's line, `command` the step. */
const smtpError = (response: string, command: string) =>
  Object.assign(new Error(`failed: ${response}`), { code: 'EENVELOPE', response, responseCode: Number(response.slice(0, 3)), command });

describe('what a failed SMTP transaction means', () => {
  it('a 5xx to RCPT TO or DATA about the address or mailbox, or with no status, is a hard bounce', () => {
    expect(smtpFailureOf(smtpError('550 5.1.1 unknown user', 'RCPT TO'))).toEqual({ kind: 'hard', response: '550 5.1.1 unknown user' });
    expect(smtpFailureOf(smtpError('552 5.2.2 mailbox full', 'RCPT TO')).kind).toBe('hard');
    expect(smtpFailureOf(smtpError('554 transaction failed', 'DATA')).kind).toBe('hard');
    expect(smtpFailureOf(smtpError('550 5.4.1 recipient address rejected', 'DATA')).kind).toBe('hard');
  });

  it('a 5xx to RCPT TO or DATA that refuses the message, not the address (X.3, X.6, X.7), is refused: our relay\'s policy about us', () => {
    expect(smtpFailureOf(smtpError('554 5.7.1 rejected as spam', 'DATA'))).toEqual({ kind: 'refused', response: '554 5.7.1 rejected as spam' });
    expect(smtpFailureOf(smtpError('554 5.7.1 <a@b.example>: Relay access denied', 'RCPT TO')).kind).toBe('refused');
    expect(smtpFailureOf(smtpError('550 5.6.0 content rejected', 'DATA')).kind).toBe('refused');
    expect(smtpFailureOf(smtpError('550 5.3.2 system not accepting network messages', 'RCPT TO')).kind).toBe('refused');
  });

  it("a message too big, or a refused sender, is the message's failure: refused, whatever the recipient", () => {
    expect(smtpFailureOf(smtpError('552 5.3.4 Message size exceeds fixed limit', 'DATA'))).toEqual({ kind: 'refused', response: '552 5.3.4 Message size exceeds fixed limit' });
    expect(smtpFailureOf(smtpError('552 message size exceeds maximum', 'DATA')).kind).toBe('refused');
    expect(smtpFailureOf(smtpError('550 5.7.1 Sender domain not verified', 'MAIL FROM')).kind).toBe('refused');
    // nodemailer's own check of the relay's EHLO SIZE, before anything is sent (no reply code).
    const oversized = Object.assign(new Error('Message size larger than allowed 10240000'), { code: 'EMESSAGE', command: 'MAIL FROM' });
    expect(smtpFailureOf(oversized)).toEqual({ kind: 'refused', response: 'Message size larger than allowed 10240000' });
  });

  it('a 4xx to RCPT TO or DATA is a soft bounce: an answer about this recipient or message', () => {
    expect(smtpFailureOf(smtpError('452 4.2.2 mailbox full', 'RCPT TO'))).toEqual({ kind: 'soft', response: '452 4.2.2 mailbox full' });
    expect(smtpFailureOf(smtpError('451 4.7.1 greylisted, try later', 'DATA')).kind).toBe('soft');
  });

  it("the relay's own trouble is an outage, which the circuit breaker counts: 421, a 4xx to MAIL FROM, a refused greeting, EHLO or login, no connection, a timeout", () => {
    expect(smtpFailureOf(smtpError('535 5.7.8 Authentication credentials invalid', 'AUTH PLAIN')).kind).toBe('outage');
    expect(smtpFailureOf(smtpError('554 5.7.1 no SMTP service here', 'CONN')).kind).toBe('outage');
    expect(smtpFailureOf(smtpError('550 not accepting mail from you', 'EHLO')).kind).toBe('outage');
    expect(smtpFailureOf(smtpError('421 4.3.2 shutting down', 'RCPT TO')).kind).toBe('outage');
    expect(smtpFailureOf(smtpError('451 4.3.0 local error', 'MAIL FROM')).kind).toBe('outage');
    expect(smtpFailureOf(smtpError('421 too busy', 'CONN')).kind).toBe('outage');
    expect(smtpFailureOf(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNECTION', command: 'CONN' })).kind).toBe('outage');
    expect(smtpFailureOf(Object.assign(new Error('Timeout'), { code: 'ETIMEDOUT', command: 'CONN' })).kind).toBe('outage');
    expect(smtpFailureOf(new Error('Breaker is open')).kind).toBe('outage');
  });
});

describe('retrying a soft bounce', () => {
  const at = (iso: string) => new Date(iso);

  it('the first 4xx starts the window and retries a minute later; the pause doubles, up to an hour', () => {
    const first = afterSoftFailure(undefined, at('2026-01-01T00:00:00Z'), 72);
    expect(first).toEqual({ kind: 'retry', at: '2026-01-01T00:01:00.000Z', failures: { firstAt: '2026-01-01T00:00:00.000Z', count: 1 } });
    const third = afterSoftFailure({ firstAt: '2026-01-01T00:00:00.000Z', count: 2 }, at('2026-01-01T00:03:00Z'), 72);
    expect(third).toMatchObject({ kind: 'retry', at: '2026-01-01T00:07:00.000Z', failures: { count: 3 } });
    const later = afterSoftFailure({ firstAt: '2026-01-01T00:00:00.000Z', count: 12 }, at('2026-01-02T00:00:00Z'), 72);
    expect(later).toMatchObject({ kind: 'retry', at: '2026-01-02T01:00:00.000Z' });
  });

  it('never retries past the end of the window, and a 4xx at its end is the soft bounce', () => {
    const last = afterSoftFailure({ firstAt: '2026-01-01T00:00:00.000Z', count: 40 }, at('2026-01-03T23:30:00Z'), 72);
    expect(last).toMatchObject({ kind: 'retry', at: '2026-01-04T00:00:00.000Z' });
    expect(afterSoftFailure({ firstAt: '2026-01-01T00:00:00.000Z', count: 41 }, at('2026-01-04T00:00:00Z'), 72)).toEqual({
      kind: 'bounce',
      failures: { firstAt: '2026-01-01T00:00:00.000Z', count: 42 },
    });
  });

  it('a short window still gets about ten tries: no pause is longer than a tenth of it', () => {
    const first = afterSoftFailure(undefined, at('2026-01-01T00:00:00Z'), 0.01); // 36 s
    expect(first).toMatchObject({ kind: 'retry', at: '2026-01-01T00:00:03.600Z' });
  });
});

describe('what a soft bounce does', () => {
  const soft = { event: 'email.bounce' as const, bounce: { type: 'soft' as const } };
  const limit = { count: 3, windowDays: 7 };

  it('one soft bounce neither suppresses nor unsubscribes; a hard bounce and a complaint do', () => {
    expect(consequenceOf(soft, 1, limit)).toBeUndefined();
    expect(consequenceOf({ event: 'email.bounce', bounce: { type: 'hard' } })).toBe('hard_bounce');
    expect(consequenceOf({ event: 'email.bounce' })).toBe('hard_bounce');
    expect(consequenceOf({ event: 'email.complaint' })).toBe('complaint');
    expect(consequenceOf({ event: 'email.delivery' })).toBeUndefined();
  });

  it('the third soft bounce of a contact within the window suppresses like a hard one; a count of 0 never does', () => {
    expect(consequenceOf(soft, 2, limit)).toBeUndefined();
    expect(consequenceOf(soft, 3, limit)).toBe('soft_bounces');
    expect(consequenceOf(soft, 4, limit)).toBe('soft_bounces');
    expect(consequenceOf(soft, 50, { count: 0, windowDays: 7 })).toBeUndefined();
    expect(softBounceWindowStart(limit, '2026-01-08T00:00:00.000Z')).toBe('2026-01-01T00:00:00.000Z');
  });
});

describe('soft-bounce settings', () => {
  it('default to 72 hours of retries and 3 soft bounces in 7 days; a decimal number of hours is taken', () => {
    expect(loadConfig({})).toMatchObject({ softBounceRetryHours: 72, softBounceSuppressCount: 3, softBounceWindowDays: 7 });
    expect(loadConfig({ SOFT_BOUNCE_RETRY_HOURS: '0.01' }).softBounceRetryHours).toBe(0.01);
  });

  it('refuse a window that is not a positive number, and a count that is not whole', () => {
    expect(() => loadConfig({ SOFT_BOUNCE_RETRY_HOURS: '0' })).toThrow(/SOFT_BOUNCE_RETRY_HOURS/);
    expect(() => loadConfig({ SOFT_BOUNCE_RETRY_HOURS: 'soon' })).toThrow(/SOFT_BOUNCE_RETRY_HOURS/);
    expect(() => loadConfig({ SOFT_BOUNCE_SUPPRESS_COUNT: '2.5' })).toThrow(/SOFT_BOUNCE_SUPPRESS_COUNT/);
  });
});

describe('one final bounce per email, the first', () => {
  const hard = { type: 'hard' as const, status: '5.1.1', diagnostic: '550 5.1.1 User unknown' };
  const soft = { type: 'soft' as const, status: '4.2.2', diagnostic: '452 4.2.2 Mailbox full' };

  it('an email a relay took, or one still retried after 4xx answers, takes the reported bounce, hard or soft', () => {
    expect(bounceVerdict({ status: 'DELIVERED' }, hard)).toBe('claim');
    expect(bounceVerdict({ status: 'DELIVERED' }, soft)).toBe('claim');
    // The 4xx retries were not final: a hard report wins.
    expect(bounceVerdict({ status: 'SENDING' }, hard)).toBe('claim');
  });

  it('a hard report after the final soft bounce changes nothing, nor a late soft one after a hard bounce', () => {
    expect(bounceVerdict({ status: 'BOUNCED', bounce: soft }, hard)).toBe('ignore');
    expect(bounceVerdict({ status: 'BOUNCED', bounce: hard }, soft)).toBe('ignore');
    expect(bounceVerdict({ status: 'BOUNCED', bounce: hard }, { type: 'hard', status: '5.7.1' })).toBe('ignore');
  });

  it('the bounce the email already holds goes on to its event (the mailer\'s own, or a redelivery after a crash)', () => {
    expect(bounceVerdict({ status: 'BOUNCED', bounce: hard }, { ...hard, diagnostic: 'worded otherwise' })).toBe('continue');
    expect(bounceVerdict({ status: 'BOUNCED', bounce: soft }, soft)).toBe('continue');
  });

  it('an email never sent takes no bounce', () => {
    for (const status of ['FAILED', 'SKIPPED', 'SUPPRESSED'] as const) expect(bounceVerdict({ status }, hard)).toBe('ignore');
  });

  it('a QUEUED one does: a report names only an email handed over, in the hand of a mailer that holds its claim in memory', () => {
    expect(bounceVerdict({ status: 'QUEUED' }, hard)).toBe('claim');
  });
});

describe('the sweep for due tries', () => {
  it('looks every twentieth of the window, at least every 30 s and at most every quarter second', () => {
    expect(retrySweepMs(72)).toBe(30_000);
    expect(retrySweepMs(0.1)).toBe(18_000);
    expect(retrySweepMs(0.002)).toBe(360);
    expect(retrySweepMs(0.0001)).toBe(250);
  });
});
