import { DuplicateKeyError } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { notFound } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { decodeTimeCursor, encodeTimeCursor, olderThan } from '../time-cursor.ts';
import { suppressionId, suppressions, type SuppressionDoc, type SuppressionReason } from './collection.ts';

export interface Suppression {
  email: string;
  reason: SuppressionReason;
  detail: string | null;
  emailId: string | null;
  createdAt: string;
}

const view = (doc: SuppressionDoc): Suppression => ({ email: doc.email, reason: doc.reason, detail: doc.detail, emailId: doc.emailId, createdAt: doc.createdAt });

/**
 * Puts an address on the project's list; the first reason stays (a complaint after a bounce
 * changes nothing). Returns whether it was added now.
 */
export async function suppress(
  p: Pick<Platform, 'store'>,
  projectId: string,
  email: string,
  entry: { reason: SuppressionReason; detail?: string | null; emailId?: string | null },
): Promise<{ suppression: Suppression; created: boolean }> {
  const doc: SuppressionDoc = {
    _id: suppressionId(projectId, email),
    projectId,
    email: email.toLowerCase(),
    reason: entry.reason,
    detail: entry.detail?.slice(0, 1000) ?? null,
    emailId: entry.emailId ?? null,
    createdAt: nowIso(),
  };
  try {
    await suppressions(p.store).insertOne(doc);
    return { suppression: view(doc), created: true };
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    const existing = await suppressions(p.store).findOne({ _id: doc._id });
    if (!existing) throw err;
    return { suppression: view(existing), created: false };
  }
}

/** The suppressed addresses among `addresses` (lower-cased), with their entries: one query for a batch. */
export async function suppressedAmong(p: Pick<Platform, 'store'>, projectId: string, addresses: string[]): Promise<Map<string, SuppressionDoc>> {
  if (addresses.length === 0) return new Map();
  const ids = [...new Set(addresses.map((a) => suppressionId(projectId, a)))];
  const found = await suppressions(p.store).find(ids.length === 1 ? { _id: ids[0] } : { _id: { $in: ids } });
  return new Map(found.filter((doc) => doc.projectId === projectId).map((doc) => [doc.email, doc]));
}

export async function getSuppression(p: Platform, projectId: string, email: string): Promise<Suppression> {
  const doc = await suppressions(p.store).findOne({ _id: suppressionId(projectId, email) });
  if (!doc || doc.projectId !== projectId) throw notFound('Suppression');
  return view(doc);
}

/** DELETE /suppressions/:email: the address may receive email again. */
export async function unsuppress(p: Platform, projectId: string, email: string): Promise<void> {
  const deleted = await suppressions(p.store).deleteOne({ _id: suppressionId(projectId, email) });
  if (deleted === 0) throw notFound('Suppression');
}

/** Newest first (the time it was added), in the spec's generic list envelope. */
export async function listSuppressions(p: Platform, projectId: string, query: { limit: number; cursor?: string }) {
  const after = query.cursor === undefined ? {} : olderThan(decodeTimeCursor(query.cursor));
  const collection = suppressions(p.store);
  const [docs, total] = await Promise.all([
    collection.find({ projectId, ...after }, { sort: { createdAt: -1, _id: -1 }, limit: query.limit + 1 }),
    collection.countDocuments({ projectId }),
  ]);
  const hasMore = docs.length > query.limit;
  const items = docs.slice(0, query.limit);
  const last = items[items.length - 1];
  return { items: items.map(view), nextCursor: hasMore ? encodeTimeCursor({ createdAt: last.createdAt, id: last._id }) : null, hasMore, total };
}
