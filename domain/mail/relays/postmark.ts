import { bounceOf, EMAIL_ID_TAG, type RelayEvent, type RelayOutcome } from './events.ts';
import { badSignature, digestOf, field, jsonOf, sameSecret, type RelayProvider, type RelayRequest } from './request.ts';

/**
 * Postmark signs nothing: its webhooks are secured with HTTP Basic auth in the webhook URL
 * (`https://postmark:<signingKey>@host/v1/relay-events/postmark/<projectId>`). The password is
 * the project's signing key; the user name is not checked. Our email is named by the metadata the
 * mailer sets (`X-PM-Metadata-mailroom-email-id`). Postmark gives no event id, so a retry (the
 * same body) is recognised by the body's digest.
 */
const HARD = new Set(['HardBounce', 'BadEmailAddress']);
const SOFT = new Set(['SoftBounce', 'Transient', 'DnsError']);

export const postmark: RelayProvider = {
  setting: 'signingKey',
  // It goes into the webhook URL as the Basic auth password, so only characters a URL keeps as they are.
  problemWith: (v) => (/^[A-Za-z0-9._~-]{16,200}$/.test(v) ? undefined : '16 to 200 letters, digits or ._~- (the password of the webhook URL)'),
  read: (req, signingKey) => {
    verifyPostmark(req, signingKey);
    return postmarkEvents(req);
  },
};

function verifyPostmark(req: RelayRequest, signingKey: string): void {
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  const decoded = basic ? Buffer.from(basic, 'base64').toString('utf8') : '';
  const password = decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : '';
  if (!sameSecret(password, signingKey)) throw badSignature('Postmark');
}

function postmarkEvents(req: RelayRequest): RelayEvent[] {
  const payload = jsonOf(req.body);
  const outcome = outcomeOf(payload);
  if (!outcome) return [];
  return [{ id: digestOf(req.body), refs: [field(payload, 'Metadata', EMAIL_ID_TAG)], outcome }];
}

function outcomeOf(payload: unknown): RelayOutcome | undefined {
  switch (field(payload, 'RecordType')) {
    case 'Delivery':
      return { kind: 'delivery' };
    case 'Bounce': {
      const type = String(field(payload, 'Type'));
      // Auto-replies, challenge requests and the like come as bounces too: they say nothing of the address.
      if (!HARD.has(type) && !SOFT.has(type)) return undefined;
      return { kind: 'bounce', bounce: bounceOf(HARD.has(type) ? 'hard' : 'soft', field(payload, 'Details') || field(payload, 'Description')) };
    }
    case 'SpamComplaint':
      return { kind: 'complaint' };
    case 'Open':
      return { kind: 'open' };
    case 'Click': {
      const url = field(payload, 'OriginalLink');
      return typeof url === 'string' ? { kind: 'click', url } : undefined;
    }
    default:
      return undefined;
  }
}
