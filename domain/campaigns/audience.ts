import type { AudienceCheck, CampaignState } from '../../actors/campaign/behaviour.ts';
import type { Filter } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { contacts, type ContactDoc } from '../contacts/collection.ts';
import { dataFieldTypes } from '../contacts/data-types.ts';
import { memberId, segmentMembers, segments } from '../segments/collection.ts';
import { conditionQuery } from '../segments/query.ts';

/**
 * Who a campaign goes to, always subscribed contacts only (the spec's delivery table):
 * ALL: every subscribed contact of the project; SEGMENT: the segment's members (DYNAMIC: its
 * condition; STATIC: `segment_members`); FILTERED: the campaign's own condition. Recipients are
 * walked in contact `_id` order, so a cursor (the last `_id` queued) says exactly who is done.
 */
export type Audience = { kind: 'contacts'; filter: Filter } | { kind: 'static'; segmentId: string };

export class SegmentGoneError extends Error {
  readonly segmentId: string;
  constructor(segmentId: string) {
    super(`The campaign's segment ${segmentId} no longer exists`);
    this.segmentId = segmentId;
  }
}

/** What the audience is read from: a campaign, or an audience being composed. */
export type AudienceSource = Pick<CampaignState, 'projectId' | 'audienceType' | 'segmentId' | 'audienceCondition'>;

/**
 * Relative conditions ("within 7 days") count back from `now`: the moment sending began. The
 * project and `subscribed` stay top-level fields, the condition under an `$and`: stores (FerretDB
 * among them) find the audience's contacts by index from the top-level fields.
 */
export async function audienceOf(p: Platform, campaign: AudienceSource, now: Date): Promise<Audience> {
  const base: Filter = { projectId: campaign.projectId, subscribed: true };
  if (campaign.audienceType === 'ALL') return { kind: 'contacts', filter: base };
  const types = await dataFieldTypes(p.store, campaign.projectId);
  if (campaign.audienceType === 'FILTERED') {
    return { kind: 'contacts', filter: { ...base, $and: [await conditionQuery(p.store, campaign.projectId, campaign.audienceCondition, now, types)] } };
  }
  const segment = await segments(p.store).findOne({ _id: campaign.segmentId!, projectId: campaign.projectId });
  if (!segment) throw new SegmentGoneError(campaign.segmentId!);
  if (segment.type === 'STATIC') return { kind: 'static', segmentId: segment._id };
  return { kind: 'contacts', filter: { ...base, $and: [await conditionQuery(p.store, campaign.projectId, segment.condition, now, types)] } };
}

/** How many would receive it now; a deleted segment is reported, not read as empty. */
export async function checkAudience(p: Platform, campaign: AudienceSource, now: Date): Promise<AudienceCheck> {
  let audience: Audience;
  try {
    audience = await audienceOf(p, campaign, now);
  } catch (err) {
    if (err instanceof SegmentGoneError) return { kind: 'segmentMissing', segmentId: err.segmentId };
    throw err;
  }
  if (audience.kind === 'contacts') return { kind: 'ok', size: await contacts(p.store).countDocuments(audience.filter) };
  const members = await segmentMembers(p.store).find({ segmentId: audience.segmentId }, { projection: { contactId: 1 } });
  const ids = members.map((m) => m.contactId);
  const size = ids.length ? await contacts(p.store).countDocuments({ _id: { $in: ids }, projectId: campaign.projectId, subscribed: true }) : 0;
  return { kind: 'ok', size };
}

export type Recipient = Pick<ContactDoc, '_id' | 'email' | 'data'>;

/**
 * The next batch: up to `limit` audience entries after `after` (a contact `_id`), in `_id` order.
 * `nextCursor` is null once the audience is exhausted.
 */
export async function nextRecipients(
  p: Platform,
  campaign: CampaignState,
  audience: Audience,
  after: string | null,
  limit: number,
): Promise<{ recipients: Recipient[]; nextCursor: string | null }> {
  const projection = { email: 1, data: 1 } as const;
  if (audience.kind === 'contacts') {
    // The cursor beside the audience's own top-level fields (which never name `_id`), not under an
    // `$and`, where FerretDB would not see it: every store then reads the batch from the
    // `{projectId, subscribed, _id}` index from the cursor on.
    const filter = after === null ? audience.filter : { ...audience.filter, _id: { $gt: after } };
    const recipients = await contacts(p.store).find(filter, { sort: { _id: 1 }, limit, projection });
    return { recipients, nextCursor: recipients.length === limit ? recipients[recipients.length - 1]._id : null };
  }
  // Member ids are `<segmentId>/<contactId>`: in member `_id` order is in contact `_id` order.
  const memberFilter: Filter = { segmentId: audience.segmentId, ...(after === null ? {} : { _id: { $gt: memberId(audience.segmentId, after) } }) };
  const members = await segmentMembers(p.store).find(memberFilter, { sort: { _id: 1 }, limit, projection: { contactId: 1 } });
  const ids = members.map((m) => m.contactId);
  const found = ids.length
    ? await contacts(p.store).find({ _id: { $in: ids }, projectId: campaign.projectId, subscribed: true }, { sort: { _id: 1 }, projection })
    : [];
  return { recipients: found, nextCursor: members.length === limit ? members[members.length - 1].contactId : null };
}
