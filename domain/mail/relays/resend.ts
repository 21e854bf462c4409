import { Webhook } from 'standardwebhooks';
import { bounceOf, EMAIL_ID_HEADER, EMAIL_ID_TAG, headerIn, type RelayEvent, type RelayOutcome } from './events.ts';
import { badSignature, field, jsonOf, type RelayProvider, type RelayRequest } from './request.ts';

/**
 * Resend signs with Svix (the Standard Webhooks scheme under `svix-*` header names): HMAC-SHA256
 * of `id.timestamp.body` with the `whsec_` secret, a timestamp within five minutes. The
 * `svix-id` is the same on every retry. Our email is named by the mailer's header, which Resend
 * reports in `data.headers`, or by a tag of that name.
 */
export const resend: RelayProvider = {
  setting: 'signingKey',
  problemWith: (v) => (/^whsec_[A-Za-z0-9+/=]{16,200}$/.test(v) && isSecret(v) ? undefined : "Resend's signing secret, whsec_…"),
  read: (req, secret) => resendEvents(req, secret),
};

function isSecret(value: string): boolean {
  try {
    new Webhook(value);
    return true;
  } catch {
    return false;
  }
}

function resendEvents(req: RelayRequest, secret: string): RelayEvent[] {
  const id = req.headers['svix-id'];
  const headers = { 'webhook-id': id ?? '', 'webhook-timestamp': req.headers['svix-timestamp'] ?? '', 'webhook-signature': req.headers['svix-signature'] ?? '' };
  try {
    new Webhook(secret).verify(req.body.toString('utf8'), headers);
  } catch {
    throw badSignature('Resend');
  }
  const payload = jsonOf(req.body);
  const outcome = outcomeOf(payload);
  if (!outcome || !id) return [];
  const data = field(payload, 'data');
  return [{ id, refs: [headerIn(field(data, 'headers'), EMAIL_ID_HEADER), tagIn(field(data, 'tags'))], outcome }];
}

/** Resend gives tags as `{name: value}` or as `[{name, value}]`. */
function tagIn(tags: unknown): unknown {
  return Array.isArray(tags) ? headerIn(tags, EMAIL_ID_TAG) : field(tags, EMAIL_ID_TAG);
}

function outcomeOf(payload: unknown): RelayOutcome | undefined {
  switch (field(payload, 'type')) {
    case 'email.delivered':
      return { kind: 'delivery' };
    case 'email.bounced': {
      const bounce = field(payload, 'data', 'bounce');
      return { kind: 'bounce', bounce: bounceOf(field(bounce, 'type') === 'Permanent' ? 'hard' : 'soft', field(bounce, 'message')) };
    }
    case 'email.complained':
      return { kind: 'complaint' };
    case 'email.opened':
      return { kind: 'open' };
    case 'email.clicked': {
      const url = field(payload, 'data', 'click', 'link');
      return typeof url === 'string' ? { kind: 'click', url } : undefined;
    }
    default:
      return undefined; // sent, delivery_delayed (still trying), …
  }
}
