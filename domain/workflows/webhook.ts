// The WEBHOOK step's HTTP call: JSON to the configured URL through the outbound guard
// (domain/http/outbound.ts), and which answers are worth another try.
import { callOutbound } from '../http/outbound.ts';

export interface WebhookRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
  /** Sent as `X-Mailroom-Delivery`: the same on every retry of one step visit. */
  deliveryId: string;
}

export type WebhookOutcome = { ok: true; status: number } | { ok: false; retryable: boolean; reason: string };

export interface WebhookOptions {
  allowPrivate: boolean;
  timeoutMs: number;
}

export async function callWebhook(request: WebhookRequest, options: WebhookOptions): Promise<WebhookOutcome> {
  const headers: Record<string, string> = {
    'user-agent': 'mailroom-webhook/1',
    'x-mailroom-delivery': request.deliveryId,
    ...Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k.toLowerCase(), v])),
  };
  const body = request.method === 'GET' ? undefined : Buffer.from(JSON.stringify(request.body));
  if (body) headers['content-type'] ??= 'application/json';
  const answer = await callOutbound({ url: request.url, method: request.method, headers, body }, options);
  if (!answer.answered) return { ok: false, retryable: !answer.refused, reason: answer.reason };
  const { status } = answer;
  const origin = new URL(request.url).origin;
  if (status >= 200 && status < 300) return { ok: true, status };
  if (status === 408 || status === 429 || status >= 500) return { ok: false, retryable: true, reason: `${origin} answered HTTP ${status}` };
  return { ok: false, retryable: false, reason: `${origin} answered HTTP ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}` };
}
