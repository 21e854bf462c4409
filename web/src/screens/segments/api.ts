import type { Segment } from '../../../../domain/segments/schema.ts';
import { api, apiEnvelope } from '../../api/client.ts';
import type { FilterCondition } from './filters.ts';

export type { Segment };
export type SegmentListItem = Pick<Segment, 'id' | 'name' | 'type' | 'memberCount' | 'trackMembership' | 'createdAt'>;

export const segmentKeys = {
  all: (projectId: string) => ['segments', projectId] as const,
  one: (projectId: string, id: string) => ['segments', projectId, id] as const,
};

/** Every segment (the pickers of campaigns and workflows). */
export const listSegments = (projectId: string) => api<SegmentListItem[]>('/segments', { projectId });

/** A page of segments (the Segments screen): each costs a count, so a long list is not counted whole. */
export const SEGMENT_PAGE = 20;
export const segmentPage = (projectId: string, cursor: string | undefined) =>
  apiEnvelope<SegmentListItem[]>('/segments', { projectId, query: { limit: SEGMENT_PAGE, cursor } });

/** POST /segments/count: what a condition selects now, nothing saved. */
export const countCondition = async (projectId: string, condition: FilterCondition | null) =>
  (await api<{ count: number }>('/segments/count', { method: 'POST', projectId, body: { condition } })).count;

/** The project's event names, for the builder's suggestions (none when they cannot be read). */
export const eventNames = (projectId: string) => api<string[]>('/events/names', { projectId }).catch(() => [] as string[]);
