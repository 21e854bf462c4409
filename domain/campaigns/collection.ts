import type { CampaignState } from '../../actors/campaign/behaviour.ts';
import type { Doc, DocumentStore } from '../../ports/store.ts';

/** The campaigns projection: the CampaignActor's state, saved by the actor after every change. */
export interface CampaignDoc extends Doc, CampaignState {}

export const campaigns = (store: DocumentStore) => store.collection<CampaignDoc>('campaigns');

export async function ensureCampaignIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('campaigns', [{ keys: { projectId: 1 } }, { keys: { projectId: 1, status: 1 } }]);
}

/** The Campaign object of the API: the spec's fields plus its life (status, schedule, counts). */
export const toCampaign = (doc: CampaignDoc) => ({
  id: doc._id,
  name: doc.name,
  description: doc.description,
  subject: doc.subject,
  body: doc.body,
  from: doc.from,
  fromName: doc.fromName,
  replyTo: doc.replyTo,
  audienceType: doc.audienceType,
  segmentId: doc.segmentId,
  audienceCondition: doc.audienceCondition,
  status: doc.status,
  scheduledFor: doc.scheduledFor,
  sentAt: doc.sentAt,
  completedAt: doc.completedAt,
  recipientCount: doc.recipientCount,
  cancelReason: doc.cancelReason,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
});
export type Campaign = ReturnType<typeof toCampaign>;
