import type { Campaign } from '../../domain/campaigns/collection.ts';
import type { Platform } from '../../runtime/platform.ts';
import { CAMPAIGN_ACTOR } from './actor.ts';
import type { CampaignContent } from './behaviour.ts';

/** Typed calls to one CampaignActor; every call is one turn of that campaign. */
export function campaignActorClient(p: Platform, campaignId: string) {
  const call = (method: string, input?: unknown) => p.actors.invoke<Campaign | null>(CAMPAIGN_ACTOR, campaignId, method, input);
  return {
    create: async (projectId: string, content: CampaignContent) => (await call('create', { projectId, content }))!,
    update: async (changes: Partial<CampaignContent>) => (await call('update', { changes }))!,
    send: async (scheduledFor: string | null) => (await call('send', { scheduledFor }))!,
    cancel: async () => (await call('cancel'))!,
    delete: async () => {
      await call('delete');
    },
  };
}
