import { startPeriodic } from '../../runtime/periodic.ts';
import type { Platform } from '../../runtime/platform.ts';
import type { Doc, DocumentStore } from '../../ports/store.ts';
import { nowIso } from '../ids.ts';

const DAY_MS = 86_400_000;

/**
 * Which kept message an `email.received` event was recorded from (`_id` is the event's id), and
 * until when. The bytes are a blob (`p.blobs`), one per project and message: a message to several
 * mailboxes of a project is kept once.
 */
export interface RawMessageDoc extends Doc {
  projectId: string;
  blob: string;
  expiresAt: string;
}

export const rawMessages = (store: DocumentStore) => store.collection<RawMessageDoc>('inbound_raw');

export async function ensureRawMessageIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('inbound_raw', [{ keys: { expiresAt: 1 } }]);
}

/** Until when a message received at `now` is kept: INBOUND_RAW_RETENTION_DAYS later; null when 0 keeps none. */
export function rawExpiry(now: Date, retentionDays: number): string | null {
  return retentionDays > 0 ? new Date(now.getTime() + retentionDays * DAY_MS).toISOString() : null;
}

/** How often expired messages are removed: a tenth of the retention, between a second and an hour. */
export function rawSweepPeriodMs(retentionDays: number): number {
  return retentionDays > 0 ? Math.min(3_600_000, Math.max(1_000, (retentionDays * DAY_MS) / 10)) : 3_600_000;
}

/**
 * Keeps a received message for the events it is recorded as, before the listener takes it
 * (a sender whose message was accepted finds it kept however a crash falls). A sender's retry
 * keeps the same blob (`digest`) and moves its expiry on.
 */
export async function keepRawMessage(p: Platform, projectId: string, eventIds: string[], raw: Buffer, digest: string, now = new Date()): Promise<void> {
  const expiresAt = rawExpiry(now, p.config.inboundRawRetentionDays);
  if (!expiresAt || eventIds.length === 0) return;
  const blob = `inbound/${projectId}/${digest}`;
  await p.blobs.put(blob, raw, expiresAt);
  for (const _id of eventIds) await rawMessages(p.store).updateOne({ _id }, { $set: { projectId, blob, expiresAt } }, { upsert: true });
}

/** The bytes of a project's `email.received` event: null when unknown, another project's, never kept or expired. */
export async function rawMessageOf(p: Platform, projectId: string, eventId: string, now = nowIso()): Promise<Buffer | null> {
  const kept = await rawMessages(p.store).findOne({ _id: eventId, projectId });
  if (!kept || kept.expiresAt <= now) return null;
  return p.blobs.get(kept.blob, now);
}

/** Removes what expired: the bytes, and what named them. */
export async function sweepRawMessages(p: Platform, now = nowIso()): Promise<{ blobs: number; events: number }> {
  const blobs = await p.blobs.deleteExpired(now);
  const events = await rawMessages(p.store).deleteMany({ expiresAt: { $lte: now } });
  return { blobs, events };
}

/** The mailer role's sweep (several mailers may sweep at once: removing twice is harmless). */
export function startRawMessageSweep(p: Platform): () => void {
  return startPeriodic(
    rawSweepPeriodMs(p.config.inboundRawRetentionDays),
    async () => {
      const removed = await sweepRawMessages(p);
      if (removed.blobs || removed.events) p.log.debug(removed, 'expired raw inbound messages removed');
    },
    (err) => p.log.warn({ err }, 'sweeping raw inbound messages failed; the next sweep tries again'),
  );
}
