import type { Doc, DocumentStore } from '../../ports/store.ts';

/** Why an address is suppressed: by the mail loop (a hard bounce, a complaint) or by hand. */
export type SuppressionReason = 'hard_bounce' | 'soft_bounces' | 'complaint' | 'manual';

/**
 * An address of a project that no email of any type reaches. The id is `projectId/email` (the
 * email lower-cased, as contacts keep it), so a lookup is by `_id` and adding twice is one entry.
 */
export interface SuppressionDoc extends Doc {
  projectId: string;
  email: string;
  reason: SuppressionReason;
  /** The bounce's status and diagnostic, the complaint's source, or the note given by hand. */
  detail: string | null;
  /** The email whose bounce or complaint put the address here. */
  emailId: string | null;
  createdAt: string;
}

export const suppressions = (store: DocumentStore) => store.collection<SuppressionDoc>('suppressions');

export const suppressionId = (projectId: string, email: string) => `${projectId}/${email.toLowerCase()}`;

export async function ensureSuppressionIndexes(store: DocumentStore): Promise<void> {
  // A project's list, newest first (by `_id` within the project).
  await store.ensureIndexes('suppressions', [{ keys: { projectId: 1, createdAt: 1 } }]);
}
