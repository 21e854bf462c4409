// Standard Webhooks signatures (https://www.standardwebhooks.com), made by the `standardwebhooks`
// library itself so that any receiver's Standard Webhooks library accepts them.
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/** A new signing secret in the Standard Webhooks form: `whsec_` and 32 random bytes in base64. */
export const newSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** The three headers of one attempt: `webhook-id` is the delivery's, the same on every retry. */
export function signatureHeaders(secret: string, deliveryId: string, at: Date, body: string): Record<string, string> {
  return {
    'webhook-id': deliveryId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(deliveryId, at, body),
  };
}
