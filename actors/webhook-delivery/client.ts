import type { DeliveryView } from '../../domain/webhooks/collection.ts';
import type { Platform } from '../../runtime/platform.ts';
import { WEBHOOK_DELIVERY_ACTOR } from './actor.ts';

/** Typed calls to one WebhookDeliveryActor; every call is one turn of that delivery. */
export function webhookDeliveryClient(p: Platform, deliveryId: string) {
  const call = (method: string) => p.actors.invoke<DeliveryView | null>(WEBHOOK_DELIVERY_ACTOR, deliveryId, method);
  return {
    /** Sets the reminder of the next attempt (due now for a new delivery). */
    start: async () => {
      await call('start');
    },
    /** An attempt now if one is due. */
    wake: () => call('wake'),
  };
}
