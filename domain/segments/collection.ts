import type { Doc, DocumentStore } from '../../ports/store.ts';
import type { FilterCondition } from './filter.ts';

import type { SegmentType } from './vocabulary.ts';

export { SEGMENT_TYPES, type SegmentType } from './vocabulary.ts';

/**
 * A saved segment. `condition` is stored exactly as given (DYNAMIC; null for STATIC), so other
 * rooms can ask which segments use a field: `DELETE /events/:name` looks for
 * `'condition.groups.filters.field': 'event.<name>'`. `slug` is unique in the project.
 */
export interface SegmentDoc extends Doc {
  projectId: string;
  name: string;
  slug: string;
  type: SegmentType;
  description: string | null;
  condition: FilterCondition | null;
  trackMembership: boolean;
  createdAt: string;
  updatedAt: string;
}

/** A member of a STATIC segment; `_id` is `<segmentId>/<contactId>`, so a contact is in it once. */
export interface SegmentMemberDoc extends Doc {
  projectId: string;
  segmentId: string;
  contactId: string;
  addedAt: string;
}

export const segments = (store: DocumentStore) => store.collection<SegmentDoc>('segments');
export const segmentMembers = (store: DocumentStore) => store.collection<SegmentMemberDoc>('segment_members');

export const memberId = (segmentId: string, contactId: string) => `${segmentId}/${contactId}`;

export async function ensureSegmentIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('segments', [{ keys: { projectId: 1, slug: 1 }, unique: true }, { keys: { projectId: 1 } }]);
  // By segment for counts and pages; by contact for the contact delete cascade.
  await store.ensureIndexes('segment_members', [{ keys: { segmentId: 1 } }, { keys: { projectId: 1, contactId: 1 } }]);
}

/** The segment's name lower-cased, each run of whitespace one hyphen: "VIP Customers" → "vip-customers". */
export const slugOf = (name: string): string => name.trim().toLowerCase().replace(/\s+/g, '-');
