import type { DeliveryView } from '../../domain/webhooks/collection.ts';
import type { Platform } from '../../runtime/platform.ts';
import { WEBHOOK_DELIVERY_ACTOR } from './actor.ts';

/** Typed calls to one WebhookDeliveryActor; every call is one turn of that delivery. */
export function webhookDeliveryClient(p: Platform, deliveryId: string) {
  const call = (method: string, input?: unknown) => p.actors.invoke<DeliveryView | null>(WEBHOOK_DELIVERY_ACTOR, deliveryId, method, input);
  return {
    /** Sets the reminder of a new delivery's first attempt. */
    start: async (at: string) => {
      await call('start', { at });
    },
    /** An attempt now if one is due. */
    wake: () => call('wake'),
  };
}
