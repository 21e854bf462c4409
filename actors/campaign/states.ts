/**
 * A campaign's statuses and what each allows: the rules `decide` (behaviour.ts) enforces, and the
 * dashboard reads to show only the actions a campaign's state allows. Imports nothing: the
 * dashboard bundles this file.
 */
export const CAMPAIGN_STATUSES = ['DRAFT', 'SCHEDULED', 'SENDING', 'SENT', 'CANCELLED'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export const AUDIENCE_TYPES = ['ALL', 'SEGMENT', 'FILTERED'] as const;
export type AudienceType = (typeof AUDIENCE_TYPES)[number];

/** PUT (content and audience). */
export const EDITABLE: readonly CampaignStatus[] = ['DRAFT', 'SCHEDULED'];
export const DELETABLE: readonly CampaignStatus[] = ['DRAFT', 'CANCELLED'];
/** Send now, or schedule (again, on a SCHEDULED one). */
export const SENDABLE: readonly CampaignStatus[] = ['DRAFT', 'SCHEDULED'];
export const CANCELLABLE: readonly CampaignStatus[] = ['SCHEDULED', 'SENDING'];
