import type { ParsedMail } from 'mailparser';
import { enhancedStatusIn, refusesTheMessage } from '../mail/enhanced-status.ts';
import type { BounceDetail } from '../mail/results.ts';

/**
 * What a message delivered to a Return-Path says, read from its machine-readable part: a delivery
 * status notification (RFC 3464, `message/delivery-status`) or a feedback report (RFC 5965,
 * `message/feedback-report`). Anything else (an auto-reply, a human's answer) is `other`.
 * Parse with `keepDeliveryStatus: true`, so the status part stays a part of its own.
 */
export type Report =
  | { kind: 'dsn'; recipients: DsnRecipient[] }
  | { kind: 'feedback'; feedbackType: string }
  | { kind: 'other' };

export interface DsnRecipient {
  finalRecipient?: string;
  /** `failed`, `delayed`, `delivered`, `relayed` or `expanded` (lower-cased). */
  action: string;
  status?: string;
  diagnostic?: string;
}

export function readReport(mail: Pick<ParsedMail, 'attachments'>): Report {
  const part = (type: string) => mail.attachments.find((a) => a.contentType.toLowerCase() === type);
  const feedback = part('message/feedback-report');
  if (feedback) {
    const [fields] = fieldGroups(feedback.content.toString('utf8'));
    return { kind: 'feedback', feedbackType: (fields?.get('feedback-type') ?? 'abuse').toLowerCase() };
  }
  const status = part('message/delivery-status') ?? part('message/global-delivery-status');
  if (!status) return { kind: 'other' };
  // The first group is about the message (Reporting-MTA, …); each with an Action is one recipient.
  const recipients = fieldGroups(status.content.toString('utf8'))
    .filter((f) => f.has('action'))
    .map((f) => ({
      action: f.get('action')!.toLowerCase().split(/[\s(]/)[0],
      ...optional('finalRecipient', typed(f.get('final-recipient'))),
      ...optional('status', /\d\.\d{1,3}\.\d{1,3}/.exec(f.get('status') ?? '')?.[0]),
      ...optional('diagnostic', typed(f.get('diagnostic-code'))),
    }));
  return { kind: 'dsn', recipients };
}

/**
 * What a DSN means for our email (one recipient per email, so its first recipient): a failure
 * with a permanent status (5.x.x) is a hard bounce, unless the status says the message was refused
 * rather than the address (refusesTheMessage: blocked, spam, too big), a soft one; a failure with a
 * transient one (4.x.x) means the relay gave up after its own retries, a final soft bounce;
 * `delayed` and every other action record nothing (the relay is still trying). A generic `X.0.0`
 * status gives way to a more precise code of the same class in the diagnostic (Exim writes
 * `5.0.0` beside `550 5.1.1`).
 */
export function bounceOf(report: Report): BounceDetail | null {
  if (report.kind !== 'dsn') return null;
  const failed = report.recipients.find((r) => r.action === 'failed');
  if (!failed) return null;
  const inDiagnostic = failed.diagnostic ? enhancedStatusIn(failed.diagnostic) : undefined;
  let status = failed.status ?? inDiagnostic;
  if (status && inDiagnostic && /\.0\.0$/.test(status) && inDiagnostic[0] === status[0]) status = inDiagnostic;
  return {
    type: status?.startsWith('4') || refusesTheMessage(status) ? 'soft' : 'hard',
    ...optional('status', status),
    ...optional('diagnostic', failed.diagnostic),
  };
}

/** `rfc822; a@b` → `a@b`: the address or diagnostic without its type. */
function typed(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const semi = value.indexOf(';');
  return (semi >= 0 ? value.slice(semi + 1) : value).trim() || undefined;
}

const optional = <K extends string, V>(key: K, value: V | undefined) => (value === undefined ? {} : ({ [key]: value } as Record<K, V>));

/** Header-style field groups separated by blank lines, folded lines unfolded, names lower-cased. */
function fieldGroups(text: string): Map<string, string>[] {
  return text
    .replace(/\r\n/g, '\n')
    .split(/\n[ \t]*\n/)
    .map((block) => {
      const fields = new Map<string, string>();
      for (const line of block.replace(/\n[ \t]+/g, ' ').split('\n')) {
        const colon = line.indexOf(':');
        if (colon <= 0) continue;
        const name = line.slice(0, colon).trim().toLowerCase();
        if (!fields.has(name)) fields.set(name, line.slice(colon + 1).trim().replace(/\s+/g, ' '));
      }
      return fields;
    })
    .filter((fields) => fields.size > 0);
}
