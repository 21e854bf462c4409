import { createHmac } from 'node:crypto';
import { invalid } from '../../errors.ts';
import { bounceOf, EMAIL_ID_TAG, type RelayEvent, type RelayOutcome } from './events.ts';
import { badSignature, field, jsonOf, sameSecret, type RelayProvider, type RelayRequest } from './request.ts';

/**
 * Mailgun's JSON webhooks carry their signature in the body: `signature: {timestamp, token,
 * signature}`, the hex HMAC-SHA256 of timestamp + token under the HTTP webhook signing key.
 * Our email is the Message-ID Mailgun reports (`message.headers.message-id`); its event id is
 * `event-data.id`.
 */
export const mailgun: RelayProvider = {
  setting: 'signingKey',
  problemWith: (v) => (/^\S{8,200}$/.test(v) ? undefined : "Mailgun's HTTP webhook signing key"),
  read: (req, signingKey) => mailgunEvents(req, signingKey),
};

function mailgunEvents(req: RelayRequest, signingKey: string): RelayEvent[] {
  const payload = jsonOf(req.body);
  const { timestamp, token, signature } = (field(payload, 'signature') ?? {}) as Record<string, unknown>;
  if (typeof timestamp !== 'string' && typeof timestamp !== 'number') throw badSignature('Mailgun');
  if (typeof token !== 'string' || typeof signature !== 'string') throw badSignature('Mailgun');
  const expected = createHmac('sha256', signingKey).update(`${timestamp}${token}`).digest('hex');
  if (!sameSecret(signature.toLowerCase(), expected)) throw badSignature('Mailgun');

  const data = field(payload, 'event-data');
  const id = field(data, 'id');
  if (typeof id !== 'string' || !id) throw invalid('event-data.id', 'A Mailgun event carries its id', 'required');
  const outcome = outcomeOf(data);
  if (!outcome) return [];
  return [{ id, refs: [field(data, 'message', 'headers', 'message-id'), field(data, 'user-variables', EMAIL_ID_TAG)], outcome }];
}

function outcomeOf(data: unknown): RelayOutcome | undefined {
  switch (field(data, 'event')) {
    case 'delivered':
      return { kind: 'delivery' };
    case 'failed': {
      const status = field(data, 'delivery-status');
      const words = [field(status, 'code'), field(status, 'message') || field(status, 'description')].filter(Boolean).join(' ');
      return { kind: 'bounce', bounce: bounceOf(field(data, 'severity') === 'permanent' ? 'hard' : 'soft', words || field(data, 'reason'), field(status, 'enhanced-code')) };
    }
    case 'complained':
      return { kind: 'complaint' };
    case 'opened':
      return { kind: 'open' };
    case 'clicked': {
      const url = field(data, 'url');
      return typeof url === 'string' ? { kind: 'click', url } : undefined;
    }
    default:
      return undefined;
  }
}
