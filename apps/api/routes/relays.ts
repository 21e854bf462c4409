import { z } from 'zod';
import { RELAY_PROVIDERS } from '../../../domain/mail/relays/providers.ts';
import { receiveRelayPost } from '../../../domain/mail/relays/receive.ts';
import { listRelays, removeRelay, setRelay } from '../../../domain/mail/relays/settings.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { route, type RouteSpec } from '../http/route.ts';
import { idParams } from './common.ts';

const provider = z.enum(RELAY_PROVIDERS).describe('The relay provider: ses (through SNS), postmark, mailgun, sendgrid or resend');
const relayView = z.object({
  provider,
  webhookUrl: z.string().describe("The URL to give the provider (Postmark: with the signing key as the Basic auth password)"),
  topicArn: z.string().optional(),
  updatedAt: z.string(),
});
/** A provider batches events; SendGrid's batches are the largest. */
const MAX_POST_BYTES = 5 * 1024 * 1024;

export function relayRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'post', path: '/v1/relay-events/:provider/:projectId', tag: 'Relay webhooks', auth: 'none', errors: [401], unmetered: true,
      summary: "A relay provider's delivery, bounce, complaint, open and click events for a project (the provider's signature is the credential)",
      description:
        "Checked against the project's settings for the provider (PUT /projects/:id/relays/:provider): a missing or wrong signature is a 401 " +
        'and records nothing. Deliveries record email.delivery; bounces email.bounce {type: hard|soft, status} (a hard one suppresses the ' +
        'address and unsubscribes the contact); complaints email.complaint (suppresses, unsubscribes); opens email.open; clicks email.click. ' +
        "Each provider event is recorded once however often the provider retries it. Events about mail that is not the project's are ignored. " +
        'SES: an SNS subscription confirmation from the configured topic is confirmed.',
      params: z.strictObject({ provider, projectId: z.string().min(1).max(100) }),
      rawBody: { maxBytes: MAX_POST_BYTES, description: "The provider's post, exactly as it sent it" },
      response: z.object({ events: z.number().int().describe('Events the post carried'), recorded: z.number().int().describe('Events recorded now (not repeats, about an email of the project)') }),
      handle: ({ params, req }) =>
        receiveRelayPost(p, params.provider, params.projectId, {
          body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
          headers: Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, Array.isArray(value) ? value[0] : value])),
        }),
    }),
    route({
      method: 'get', path: '/projects/:id/relays', tag: 'Projects', auth: 'user', errors: [404],
      summary: "The relay providers set up for the project, with their webhook URLs (secrets are never shown)",
      params: idParams,
      response: z.array(relayView),
      handle: ({ auth, params }) => listRelays(p, params.id, auth.userId),
    }),
    route({
      method: 'put', path: '/projects/:id/relays/:provider', tag: 'Projects', auth: 'user', errors: [404], needs: { admin: true },
      summary: "Set what a relay provider's webhook posts are checked with (admin)",
      description:
        'ses: topicArn, the SNS topic SES notifies. postmark: signingKey, a password you choose (16+ characters), put in the webhook URL ' +
        'as https://postmark:<signingKey>@host/…. mailgun: signingKey, the HTTP webhook signing key. sendgrid: signingKey, the ' +
        'verification key of the signed Event Webhook. resend: signingKey, the webhook signing secret (whsec_…). Replaces earlier settings.',
      params: idParams.extend({ provider }),
      body: z.strictObject({
        signingKey: z.string().min(1).max(1000).optional().describe('postmark, mailgun, sendgrid, resend'),
        topicArn: z.string().min(1).max(400).optional().describe('ses'),
      }),
      response: relayView,
      handle: ({ auth, params, body }) => setRelay(p, params.id, auth.userId, params.provider, body),
    }),
    route({
      method: 'delete', path: '/projects/:id/relays/:provider', tag: 'Projects', auth: 'user', status: 204, errors: [404], needs: { admin: true },
      summary: "Remove a relay provider's settings: its posts are refused (401) from then on (admin)",
      params: idParams.extend({ provider }),
      handle: ({ auth, params }) => removeRelay(p, params.id, auth.userId, params.provider),
    }),
  ];
}
