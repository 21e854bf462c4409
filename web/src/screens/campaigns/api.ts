import type { AudienceType, CampaignStatus } from '../../../../actors/campaign/states.ts';
import { api } from '../../api/client.ts';
import type { FilterCondition } from '../segments/filters.ts';

/** A campaign as the API answers it (GET /campaigns/:id). */
export interface Campaign {
  id: string;
  name: string;
  description: string | null;
  subject: string;
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  audienceType: AudienceType;
  segmentId: string | null;
  audienceCondition: FilterCondition | null;
  status: CampaignStatus;
  scheduledFor: string | null;
  sentAt: string | null;
  completedAt: string | null;
  recipientCount: number;
  cancelReason: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface CampaignStats {
  delivered: number;
  opens: number;
  clicks: number;
  bounces: number;
  complaints: number;
}

export interface CampaignPage {
  campaigns: Campaign[];
  page: number;
  pageSize: number;
  total: number;
  totalPages: number;
}

export const campaignKeys = {
  all: (projectId: string) => ['campaigns', projectId] as const,
  one: (projectId: string, id: string) => ['campaigns', projectId, 'one', id] as const,
};

export const campaignPath = (id: string) => `/campaigns/${encodeURIComponent(id)}`;

export interface Audience {
  audienceType: AudienceType;
  segmentId?: string | null;
  audienceCondition?: FilterCondition | null;
}

/** POST /campaigns/audience/count: the subscribed contacts an audience reaches now. */
export const countAudience = async (projectId: string, audience: Audience) =>
  (await api<{ count: number }>('/campaigns/audience/count', { method: 'POST', projectId, body: audience })).count;

export const recipientsNoun = (n: number) => `${n.toLocaleString()} ${n === 1 ? 'recipient' : 'recipients'} (subscribed contacts) now`;

/** The user's time zone, in which times are shown and entered (the API takes and answers UTC). */
export const timeZone = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

export const STATUS_LABELS: Record<CampaignStatus, string> = {
  DRAFT: 'Draft',
  SCHEDULED: 'Scheduled',
  SENDING: 'Sending',
  SENT: 'Sent',
  CANCELLED: 'Cancelled',
};

export const formatTime = (iso: string | null) =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '—';
