import type { BounceDetail } from '../results.ts';
import { enhancedStatusIn } from '../enhanced-status.ts';

/**
 * What a relay provider tells about one of our emails, in our words: the shared mapping every
 * provider file produces, so the rules of what each outcome records live once (receive.ts).
 *
 *   delivery  → email.delivery          bounce    → email.bounce {type, status, diagnostic}
 *   complaint → email.complaint         open      → email.open     click → email.click {url}
 */
export type RelayOutcome =
  | { kind: 'delivery' }
  | { kind: 'bounce'; bounce: BounceDetail }
  | { kind: 'complaint' }
  | { kind: 'open' }
  | { kind: 'click'; url: string };

export interface RelayEvent {
  /** The provider's id of this event, the same on every retry: a repeat records nothing. */
  id: string;
  /** Where the provider names our email: Message-IDs, tags or metadata values, as given. */
  refs: unknown[];
  outcome: RelayOutcome;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Our email id among a provider's references: our Message-ID is `<emailId@sender domain>`
 * (some providers drop the brackets), and the mailer's `X-Mailroom-Email-Id` header (or a
 * provider's metadata copy of it) is the bare id. Anything else is not an email of ours.
 */
export function emailIdIn(refs: unknown[]): string | undefined {
  for (const ref of refs) {
    if (typeof ref !== 'string') continue;
    const id = /^\s*<?([^@<>\s]+)(?:@[^<>\s]+)?>?\s*$/.exec(ref)?.[1];
    if (id && UUID.test(id)) return id.toLowerCase();
  }
  return undefined;
}

/** A bounce from the provider's words: hard or soft as the provider classed it, the status found in the text. */
export function bounceOf(type: 'hard' | 'soft', diagnostic: unknown, status?: unknown): BounceDetail {
  const text = typeof diagnostic === 'string' ? diagnostic.slice(0, 1000) : undefined;
  const code = typeof status === 'string' && /^[245]\.\d{1,3}\.\d{1,3}$/.test(status) ? status : text ? enhancedStatusIn(text) : undefined;
  return { type, ...(code ? { status: code } : {}), ...(text ? { diagnostic: text } : {}) };
}

/** The value of a header in a provider's `[{name, value}]` list (SES, Resend), by name in any case. */
export function headerIn(headers: unknown, name: string): string | undefined {
  if (!Array.isArray(headers)) return undefined;
  const found = headers.find((h) => typeof h?.name === 'string' && h.name.toLowerCase() === name.toLowerCase());
  return typeof found?.value === 'string' ? found.value : undefined;
}

/** The header the mailer adds to every email, for providers that echo headers (SES, Resend). */
export const EMAIL_ID_HEADER = 'X-Mailroom-Email-Id';
/** The same id as a provider's metadata, tag or custom argument (Postmark's is set by the mailer). */
export const EMAIL_ID_TAG = 'mailroom-email-id';

/**
 * The headers the mailer adds so relay providers can name our email back: our own (SES and
 * Resend echo headers) and Postmark's metadata header (Postmark strips it and reports it).
 */
export const emailIdHeaders = (emailId: string) => ({ [EMAIL_ID_HEADER]: emailId, [`X-PM-Metadata-${EMAIL_ID_TAG}`]: emailId });
