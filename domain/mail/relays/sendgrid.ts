import { createPublicKey, createVerify } from 'node:crypto';
import { invalid } from '../../errors.ts';
import { bounceOf, EMAIL_ID_TAG, type RelayEvent, type RelayOutcome } from './events.ts';
import { badSignature, field, jsonOf, type RelayProvider, type RelayRequest } from './request.ts';

/**
 * SendGrid's signed Event Webhook: an ECDSA (P-256, SHA-256) signature over the timestamp header
 * followed by the raw body, base64 in `X-Twilio-Email-Event-Webhook-Signature`, checked with the
 * verification key SendGrid shows (base64 DER, no PEM armour). A body is a batch of events; each
 * has its `sg_event_id`. Our email is the `smtp-id` (the Message-ID the mailer set).
 */
export const sendgrid: RelayProvider = {
  setting: 'signingKey',
  problemWith: (v) => (isEcKey(v) ? undefined : "SendGrid's verification key (base64, an ECDSA public key)"),
  read: (req, publicKey) => {
    verifySendgrid(req, publicKey);
    return sendgridEvents(req);
  },
};

function isEcKey(value: string): boolean {
  try {
    return value.length <= 1000 && sendgridKey(value).asymmetricKeyType === 'ec';
  } catch {
    return false;
  }
}

export function verifySendgrid(req: RelayRequest, publicKey: string): void {
  const signature = req.headers['x-twilio-email-event-webhook-signature'];
  const timestamp = req.headers['x-twilio-email-event-webhook-timestamp'];
  if (!signature || !timestamp) throw badSignature('SendGrid');
  const verifier = createVerify('sha256');
  verifier.update(timestamp);
  verifier.update(req.body);
  if (!verifier.verify(sendgridKey(publicKey), Buffer.from(signature, 'base64'))) throw badSignature('SendGrid');
}

/** The verification key as SendGrid shows it (base64 SPKI DER) or as PEM; throws on anything else. */
function sendgridKey(publicKey: string) {
  return /BEGIN PUBLIC KEY/.test(publicKey)
    ? createPublicKey(publicKey)
    : createPublicKey({ key: Buffer.from(publicKey.replace(/\s+/g, ''), 'base64'), format: 'der', type: 'spki' });
}

function sendgridEvents(req: RelayRequest): RelayEvent[] {
  const batch = jsonOf(req.body);
  if (!Array.isArray(batch)) throw invalid('body', 'A SendGrid body is an array of events', 'invalid_type');
  return batch.flatMap((event): RelayEvent[] => {
    const id = field(event, 'sg_event_id');
    const outcome = outcomeOf(event);
    if (typeof id !== 'string' || !outcome) return [];
    return [{ id, refs: [field(event, 'smtp-id'), field(event, EMAIL_ID_TAG)], outcome }];
  });
}

function outcomeOf(event: unknown): RelayOutcome | undefined {
  switch (field(event, 'event')) {
    case 'delivered':
      return { kind: 'delivery' };
    case 'bounce':
      // `blocked` is a refusal of this message (reputation, content), not of the address.
      return { kind: 'bounce', bounce: bounceOf(field(event, 'type') === 'blocked' ? 'soft' : 'hard', field(event, 'reason'), field(event, 'status')) };
    case 'spamreport':
      return { kind: 'complaint' };
    case 'open':
      return { kind: 'open' };
    case 'click': {
      const url = field(event, 'url');
      return typeof url === 'string' ? { kind: 'click', url } : undefined;
    }
    default:
      return undefined; // processed, deferred (still being retried), dropped, unsubscribe …
  }
}
