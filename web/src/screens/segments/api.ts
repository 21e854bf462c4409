import type { Segment } from '../../../../domain/segments/schema.ts';
import { api } from '../../api/client.ts';
import type { FilterCondition } from './filters.ts';

export type { Segment };
export type SegmentListItem = Pick<Segment, 'id' | 'name' | 'type' | 'memberCount' | 'trackMembership' | 'createdAt'>;

export const segmentKeys = {
  all: (projectId: string) => ['segments', projectId] as const,
  one: (projectId: string, id: string) => ['segments', projectId, id] as const,
};

export const listSegments = (projectId: string) => api<SegmentListItem[]>('/segments', { projectId });

/** POST /segments/count: what a condition selects now, nothing saved. */
export const countCondition = async (projectId: string, condition: FilterCondition | null) =>
  (await api<{ count: number }>('/segments/count', { method: 'POST', projectId, body: { condition } })).count;

/** The project's event names, for the builder's suggestions (none when they cannot be read). */
export const eventNames = (projectId: string) => api<string[]>('/events/names', { projectId }).catch(() => [] as string[]);
