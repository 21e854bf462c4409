import { mailgun } from './mailgun.ts';
import { postmark } from './postmark.ts';
import type { RelayProvider } from './request.ts';
import { resend } from './resend.ts';
import { sendgrid } from './sendgrid.ts';
import { ses } from './ses.ts';

export const RELAY_PROVIDERS = ['ses', 'postmark', 'mailgun', 'sendgrid', 'resend'] as const;
export type RelayProviderName = (typeof RELAY_PROVIDERS)[number];

/** What a project stores for a provider: the secret (or public key) its posts are checked with, or SES's topic. */
export interface RelayCredential {
  setting: RelayProvider['setting'];
  value: string;
}

/** Every provider a project can take webhooks from, by the name in its URL. */
export const PROVIDERS: Record<RelayProviderName, RelayProvider> = { ses, postmark, mailgun, sendgrid, resend };
