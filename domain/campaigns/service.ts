import { campaignActorClient } from '../../actors/campaign/client.ts';
import { contentOf, type CampaignContent } from '../../actors/campaign/behaviour.ts';
import type { Filter } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { dataFieldTypes } from '../contacts/data-types.ts';
import { requireVerifiedSender } from '../domains/sender.ts';
import { invalid, notFound } from '../errors.ts';
import { newId } from '../ids.ts';
import { emails, type EmailDoc } from '../mail/outbound.ts';
import { queueTestEmail, testSourceId } from '../mail/test-email.ts';
import { segments } from '../segments/collection.ts';
import { compileCondition, type FilterCondition } from '../segments/filter.ts';
import { campaigns, toCampaign, type Campaign, type CampaignDoc } from './collection.ts';
import { checkAudience } from './audience.ts';
import type { AudienceCountInput, CreateCampaignInput, ListCampaignsQuery, UpdateCampaignInput } from './schema.ts';
import { pageOf } from '../paging.ts';

/** A campaign of this project; another project's id is simply not found. */
async function getCampaignDoc(p: Platform, projectId: string, id: string): Promise<CampaignDoc> {
  const doc = await campaigns(p.store).findOne({ _id: id, projectId });
  if (!doc) throw notFound('Campaign');
  return doc;
}

/**
 * The audience fields must name what the type reads: SEGMENT an existing segment of the project,
 * FILTERED a valid condition (a bad filter is named `audienceCondition.groups.<i>.filters.<j>`).
 */
type AudienceFields = Pick<CampaignContent, 'audienceType' | 'segmentId' | 'audienceCondition'>;

async function checkAudienceFields(p: Platform, projectId: string, content: AudienceFields, changed: { segment: boolean; condition: boolean }) {
  if (content.audienceType === 'SEGMENT') {
    if (!content.segmentId) throw invalid('segmentId', 'segmentId is required when audienceType is SEGMENT', 'required');
    if (changed.segment && !(await segments(p.store).findOne({ _id: content.segmentId, projectId }, { projection: { _id: 1 } }))) {
      throw invalid('segmentId', 'No segment with this id in the project', 'not_found');
    }
  }
  if (content.audienceType === 'FILTERED') {
    if (content.audienceCondition === null || content.audienceCondition === undefined) {
      throw invalid('audienceCondition', 'audienceCondition is required when audienceType is FILTERED', 'required');
    }
    if (changed.condition) {
      compileCondition(content.audienceCondition, { now: new Date(), types: await dataFieldTypes(p.store, projectId), path: 'audienceCondition' });
    }
  }
}

/**
 * POST /campaigns/audience/count: how many subscribed contacts an audience reaches now, as a send
 * would size it (same checks, same query), without a campaign: the dashboard's live recipient
 * count while composing. Suppressed addresses are among them (the delivery gate skips them).
 */
export async function countAudience(p: Platform, projectId: string, input: AudienceCountInput): Promise<{ count: number }> {
  const audience: AudienceFields = {
    audienceType: input.audienceType,
    segmentId: input.audienceType === 'SEGMENT' ? (input.segmentId ?? null) : null,
    audienceCondition: input.audienceType === 'FILTERED' ? ((input.audienceCondition ?? null) as FilterCondition | null) : null,
  };
  await checkAudienceFields(p, projectId, audience, { segment: true, condition: true });
  const checked = await checkAudience(p, { projectId, ...audience }, new Date());
  if (checked.kind === 'segmentMissing') throw invalid('segmentId', 'No segment with this id in the project', 'not_found');
  return { count: checked.size };
}

export async function createCampaign(p: Platform, projectId: string, input: CreateCampaignInput): Promise<Campaign> {
  const content: CampaignContent = {
    name: input.name,
    description: input.description ?? null,
    subject: input.subject,
    body: input.body,
    from: input.from,
    fromName: input.fromName ?? null,
    replyTo: input.replyTo ?? null,
    audienceType: input.audienceType,
    segmentId: input.segmentId ?? null,
    audienceCondition: (input.audienceCondition ?? null) as FilterCondition | null,
  };
  await checkAudienceFields(p, projectId, content, { segment: true, condition: true });
  await requireVerifiedSender(p, projectId, content.from);
  return campaignActorClient(p, newId()).create(projectId, content);
}

export async function getCampaign(p: Platform, projectId: string, id: string): Promise<Campaign> {
  return toCampaign(await getCampaignDoc(p, projectId, id));
}

/** Newest first (ids are time-ordered), page-numbered, optionally by status. */
export async function listCampaigns(p: Platform, projectId: string, query: ListCampaignsQuery) {
  const filter: Filter = { projectId, ...(query.status ? { status: query.status } : {}) };
  const collection = campaigns(p.store);
  const [docs, total] = await Promise.all([
    collection.find(filter, { sort: { _id: -1 }, skip: (query.page - 1) * query.pageSize, limit: query.pageSize }),
    collection.countDocuments(filter),
  ]);
  return { campaigns: docs.map(toCampaign), ...pageOf(query, total) };
}

export async function updateCampaign(p: Platform, projectId: string, id: string, input: UpdateCampaignInput): Promise<Campaign> {
  const current = await getCampaignDoc(p, projectId, id);
  const changes = input as Partial<CampaignContent>;
  const merged: CampaignContent = { ...contentOf(current), ...Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) };
  const typeChanged = input.audienceType !== undefined && input.audienceType !== current.audienceType;
  await checkAudienceFields(p, projectId, merged, {
    segment: typeChanged || input.segmentId !== undefined,
    condition: typeChanged || input.audienceCondition !== undefined,
  });
  if (input.from !== undefined) await requireVerifiedSender(p, projectId, input.from);
  return campaignActorClient(p, id).update(changes);
}

export async function sendCampaign(p: Platform, projectId: string, id: string, scheduledFor: string | null) {
  await getCampaignDoc(p, projectId, id);
  const campaign = await campaignActorClient(p, id).send(scheduledFor);
  const message =
    campaign.status === 'SCHEDULED' ? `Campaign scheduled for ${campaign.scheduledFor}` : 'Campaign is being sent';
  return { campaign, message };
}

export async function cancelCampaign(p: Platform, projectId: string, id: string): Promise<Campaign> {
  await getCampaignDoc(p, projectId, id);
  return campaignActorClient(p, id).cancel();
}

export async function deleteCampaign(p: Platform, projectId: string, id: string): Promise<void> {
  await getCampaignDoc(p, projectId, id);
  await campaignActorClient(p, id).delete();
}

/** A new DRAFT with the same content and settings (the copy keeps the name). */
export async function duplicateCampaign(p: Platform, projectId: string, id: string): Promise<Campaign> {
  const source = await getCampaignDoc(p, projectId, id);
  return campaignActorClient(p, newId()).create(projectId, contentOf(source));
}

export { testSourceId };

/** One test email now to `email`, whatever the audience and the campaign's state (domain/mail/test-email.ts). */
export async function sendTestEmail(p: Platform, projectId: string, id: string, email: string) {
  return queueTestEmail(p, projectId, await getCampaignDoc(p, projectId, id), email, { source: 'campaign', id });
}

/**
 * Counted from the campaign's email records (one aggregate on the `{projectId, sourceId}`
 * index): delivered = DELIVERED emails; bounces = BOUNCED; opens and clicks = the tracked
 * requests summed; complaints = emails with a `complaint` recorded on them (results.ts; it
 * outlives a deleted contact).
 */
export async function campaignStats(p: Platform, projectId: string, id: string) {
  await getCampaignDoc(p, projectId, id);
  const rows = await emails(p).aggregate<{ _id: string; n: number }>([
    { $match: { projectId, sourceId: id } },
    { $group: { _id: '$status', n: { $sum: 1 } } },
  ]);
  const count = (status: string) => rows.find((r) => r._id === status)?.n ?? 0;
  let complaints = 0;
  let opens = 0;
  let clicks = 0;
  if (rows.some((r) => r._id === 'DELIVERED' || r._id === 'BOUNCED')) {
    // Opens and clicks are counters that only some emails have: summed here, not by $sum over a
    // missing field, which FerretDB and MongoDB need not treat alike.
    const sent = await emails(p).find(
      { projectId, sourceId: id, status: { $in: ['DELIVERED', 'BOUNCED'] } },
      { projection: { _id: 1, opens: 1, clicks: 1, complaint: 1 } as Record<string, 1> },
    );
    for (const e of sent as (EmailDoc & { opens?: number; clicks?: number })[]) {
      opens += e.opens ?? 0;
      clicks += e.clicks ?? 0;
      if (e.complaint) complaints++;
    }
  }
  return {
    delivered: count('DELIVERED'),
    opens,
    clicks,
    bounces: count('BOUNCED'),
    complaints,
  };
}
