import { Webhook } from 'standardwebhooks';
import { mailgunEvents } from './mailgun.ts';
import { postmarkEvents, verifyPostmark } from './postmark.ts';
import { resendEvents } from './resend.ts';
import type { RelayEvent } from './events.ts';
import type { RelayRequest } from './request.ts';
import { sendgridEvents, sendgridKey, verifySendgrid } from './sendgrid.ts';
import { sesEvents, type SnsEffects } from './ses.ts';

export const RELAY_PROVIDERS = ['ses', 'postmark', 'mailgun', 'sendgrid', 'resend'] as const;
export type RelayProviderName = (typeof RELAY_PROVIDERS)[number];

/** What a project stores for a provider: the secret (or public key) its posts are checked with, or SES's topic. */
export interface RelayCredential {
  setting: 'signingKey' | 'topicArn';
  value: string;
}

interface RelayProvider {
  /** The one setting the provider needs, and what a valid one looks like (a message when it is not). */
  setting: 'signingKey' | 'topicArn';
  problemWith(value: string): string | undefined;
  /** Checks the post's signature (401 otherwise) and reads its events (422 for a malformed body). */
  read(req: RelayRequest, value: string, sns: SnsEffects): RelayEvent[] | Promise<RelayEvent[]>;
}

const parses = (check: () => unknown) => {
  try {
    check();
    return true;
  } catch {
    return false;
  }
};

export const PROVIDERS: Record<RelayProviderName, RelayProvider> = {
  ses: {
    setting: 'topicArn',
    problemWith: (v) => (/^arn:aws(-cn|-us-gov)?:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/.test(v) ? undefined : 'An SNS topic ARN: arn:aws:sns:<region>:<account>:<topic>'),
    read: (req, topicArn, sns) => sesEvents(req, topicArn, sns),
  },
  postmark: {
    setting: 'signingKey',
    // It goes into the webhook URL as the Basic auth password, so only characters a URL keeps as they are.
    problemWith: (v) => (/^[A-Za-z0-9._~-]{16,200}$/.test(v) ? undefined : '16 to 200 letters, digits or ._~- (the password of the webhook URL)'),
    read: (req, key) => {
      verifyPostmark(req, key);
      return postmarkEvents(req);
    },
  },
  mailgun: {
    setting: 'signingKey',
    problemWith: (v) => (/^\S{8,200}$/.test(v) ? undefined : "Mailgun's HTTP webhook signing key"),
    read: (req, key) => mailgunEvents(req, key),
  },
  sendgrid: {
    setting: 'signingKey',
    problemWith: (v) => (v.length <= 1000 && parses(() => sendgridKey(v).asymmetricKeyType === 'ec' || fail()) ? undefined : "SendGrid's verification key (base64, an ECDSA public key)"),
    read: (req, key) => {
      verifySendgrid(req, key);
      return sendgridEvents(req);
    },
  },
  resend: {
    setting: 'signingKey',
    problemWith: (v) => (/^whsec_[A-Za-z0-9+/=]{16,200}$/.test(v) && parses(() => new Webhook(v)) ? undefined : "Resend's signing secret, whsec_…"),
    read: (req, secret) => resendEvents(req, secret),
  },
};

function fail(): never {
  throw new Error('not an EC key');
}
