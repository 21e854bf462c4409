// One attempt of one delivery: decide on the endpoint as it is now, send the signed POST, record
// what came back. Run by the endpoint's queue (actor.ts) and, for the test button, by the request.
import { randomInt } from 'node:crypto';
import { callOutbound } from '../../domain/http/outbound.ts';
import { webhookDeliveries, webhooks, type DeliveryDoc } from '../../domain/webhooks/collection.ts';
import { disableIfFailingSince, disableWebhook } from '../../domain/webhooks/disable.ts';
import { signatureHeaders } from '../../domain/webhooks/signing.ts';
import type { Platform } from '../../runtime/platform.ts';
import { DEFAULT_RETRY_POLICY, decide, type DeliveryCommand, type DeliveryState, type RetryPolicy } from './behaviour.ts';

export const retryPolicyOf = (p: Platform): RetryPolicy => ({ ...DEFAULT_RETRY_POLICY, firstRetryMs: p.config.webhookRetrySeconds * 1000 });

/** Attempts `doc` if it is due; returns the delivery as it is afterwards. */
export async function attemptDelivery(p: Platform, doc: DeliveryDoc): Promise<DeliveryDoc> {
  // A cached read (webhooks is read-mostly), so an endpoint disabled by an earlier attempt is seen at once.
  const webhook = await webhooks(p.store).findOne({ _id: doc.webhookId });
  const policy = retryPolicyOf(p);
  let state: DeliveryState = { status: doc.status, attempts: doc.attempts, nextAttemptAt: doc.nextAttemptAt, createdAt: doc.createdAt };
  const pending: DeliveryCommand[] = [{ kind: 'wake', endpoint: webhook && webhook.projectId === doc.projectId ? { enabled: webhook.enabled } : null }];
  while (pending.length > 0) {
    const decision = decide(state, pending.shift()!, new Date(), policy);
    state = decision.state;
    for (const effect of decision.effects) {
      switch (effect.kind) {
        case 'send': {
          const body = JSON.stringify(doc.payload);
          const at = new Date();
          const answer = await callOutbound(
            {
              url: webhook!.url,
              method: 'POST',
              headers: { 'content-type': 'application/json', 'user-agent': 'mailroom-webhook/1', ...signatureHeaders(webhook!.secret, doc._id, at, body) },
              body: Buffer.from(body),
            },
            { allowPrivate: p.config.webhookAllowPrivate, timeoutMs: p.config.webhookTimeoutMs },
          );
          const attempt = answer.answered
            ? { at: at.toISOString(), status: answer.status, durationMs: answer.durationMs, ...(answer.snippet ? { response: answer.snippet } : {}) }
            : { at: at.toISOString(), error: answer.reason, durationMs: answer.durationMs };
          pending.push({ kind: 'answered', attempt, jitter: randomInt(1_000_000) / 1_000_000 });
          break;
        }
        case 'save':
          await webhookDeliveries(p.store).updateOne(
            { _id: doc._id },
            { $set: { status: state.status, attempts: state.attempts, nextAttemptAt: state.nextAttemptAt, updatedAt: new Date().toISOString() } },
          );
          break;
        case 'disableEndpoint':
          await disableWebhook(p, doc.webhookId, effect.reason);
          break;
        case 'gaveUp':
          await disableIfFailingSince(p, doc.webhookId, effect.since);
          break;
      }
    }
  }
  return { ...doc, ...state };
}
