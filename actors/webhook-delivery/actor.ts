// The WebhookDeliveryActor shell, one per delivery: load the delivery record, decide, perform
// (the signed POST, the record, the next reminder). One turn at a time per delivery, so two
// reminders never send one delivery twice at once.
import { randomInt } from 'node:crypto';
import { callOutbound } from '../../domain/http/outbound.ts';
import { deliveryView, webhookDeliveries, webhooks, type DeliveryDoc } from '../../domain/webhooks/collection.ts';
import { disableIfFailingSince, disableWebhook } from '../../domain/webhooks/disable.ts';
import { signatureHeaders } from '../../domain/webhooks/signing.ts';
import type { ActorContext, ActorDefinition } from '../../ports/actors.ts';
import type { Platform } from '../../runtime/platform.ts';
import { DEFAULT_RETRY_POLICY, decide, type DeliveryCommand, type DeliveryState, type RetryPolicy } from './behaviour.ts';

export const WEBHOOK_DELIVERY_ACTOR = 'WebhookDeliveryActor';

type Ctx = ActorContext<never>;

export function webhookDeliveryActor(p: Platform): ActorDefinition<never> {
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, firstRetryMs: p.config.webhookRetrySeconds * 1000 };

  /** Sets the reminder of the next attempt; named by the attempt count, so a firing reminder never replaces itself. */
  const remind = (ctx: Ctx, doc: Pick<DeliveryDoc, 'attempts'>, at: string) => ctx.setReminder(`attempt-${doc.attempts.length}`, new Date(at));

  const turn = async (ctx: Ctx) => {
    const collection = webhookDeliveries(p.store);
    const doc = await collection.findOne({ _id: ctx.id });
    if (!doc) return null; // deleted with its endpoint
    const webhook = await webhooks(p.store).findOne({ _id: doc.webhookId });
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
            await collection.updateOne(
              { _id: doc._id },
              { $set: { status: state.status, attempts: state.attempts, nextAttemptAt: state.nextAttemptAt, updatedAt: new Date().toISOString() } },
            );
            break;
          case 'remind':
            await remind(ctx, state, effect.at);
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
    return deliveryView({ ...doc, ...state });
  };

  return {
    type: WEBHOOK_DELIVERY_ACTOR,
    methods: {
      /** After the record is created: the first attempt is a reminder due now, so the event's handler never waits on a receiver. */
      // No read: a start repeated for a delivery that is further on sets a reminder that finds nothing due.
      start: async (ctx, input: { at: string }) => {
        await remind(ctx, { attempts: [] }, input.at);
        return null;
      },
      /** An attempt now if one is due (the test button; the start-up resume). Returns the delivery. */
      wake: (ctx) => turn(ctx),
    },
    onReminder: async (ctx) => {
      await turn(ctx);
    },
  };
}
