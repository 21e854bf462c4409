import type { Platform } from '../../runtime/platform.ts';
import { WEBHOOK_QUEUE_ACTOR } from './actor.ts';

/** Typed calls to one endpoint's WebhookQueueActor. */
export function webhookQueueClient(p: Platform, webhookId: string) {
  return {
    /** New deliveries are due (or may be): the queue runs if it is not running already. Returns at once. */
    kick: async () => {
      await p.actors.invoke(WEBHOOK_QUEUE_ACTOR, webhookId, 'kick');
    },
  };
}
