// The SegmentSweepActor: one actor (`global`) woken by a reminder every SEGMENT_SWEEP_SECONDS.
// Each wake-up compares every tracked segment's current members (one query) with
// `segment_presence` and asks each differing contact's ContactActor to re-evaluate that segment,
// so time-based filters (`within`, `olderThan`, `triggeredWithin`, `triggeredOlderThan`) record
// their entries and exits although the contact did not change. It also catches up whatever a
// contact's turn missed (a stale cache of tracked segments, a failure).
import { segments } from '../../domain/segments/collection.ts';
import { currentMemberIds, presentIds } from '../../domain/segments/membership.ts';
import { segmentContactFilter } from '../../domain/segments/service.ts';
import type { ActorDefinition } from '../../ports/actors.ts';
import type { Platform } from '../../runtime/platform.ts';
import { syncContactSegments } from './sync.ts';

export const SEGMENT_SWEEP_ACTOR = 'SegmentSweepActor';
export const SEGMENT_SWEEP_ID = 'global';
const REMINDER = 'sweep';
/** At most this many contacts re-evaluated per segment per sweep; the rest wait for the next. */
const MAX_PER_SEGMENT = 2_000;

export function segmentSweepActor(p: Platform): ActorDefinition<Record<string, never>> {
  const interval = p.config.segmentSweepSeconds * 1000;
  return {
    type: SEGMENT_SWEEP_ACTOR,
    methods: {
      /** Arms (or re-arms) the reminder; every api process calls it at start. */
      arm: async (ctx) => {
        await ctx.setReminder(REMINDER, new Date(Date.now() + interval));
        return { intervalMs: interval };
      },
      /** One sweep now (tests, operators). */
      sweep: async () => sweepTrackedSegments(p),
    },
    async onReminder(ctx, name) {
      if (name !== REMINDER) return;
      try {
        await sweepTrackedSegments(p);
      } catch (err) {
        p.log.warn({ err }, 'segment sweep failed; retrying at the next one');
      }
      await ctx.setReminder(REMINDER, new Date(Date.now() + interval));
    },
  };
}

/** Compares each tracked segment with its presence rows; returns how many contacts were re-evaluated. */
export async function sweepTrackedSegments(p: Platform): Promise<{ segments: number; contacts: number }> {
  const tracked = await segments(p.store).find({ trackMembership: true });
  let evaluated = 0;
  for (const segment of tracked) {
    try {
      const [members, present] = await Promise.all([
        currentMemberIds(p, segment, (s) => segmentContactFilter(p, s)),
        presentIds(p, segment._id),
      ]);
      const inNow = new Set(members);
      const wasIn = new Set(present);
      const differing = [...members.filter((id) => !wasIn.has(id)), ...present.filter((id) => !inNow.has(id))].slice(0, MAX_PER_SEGMENT);
      for (let i = 0; i < differing.length; i += 20) {
        await Promise.all(
          differing.slice(i, i + 20).map((contactId) =>
            syncContactSegments(p, contactId, [segment._id]).catch((err) => p.log.warn({ err, contactId, segmentId: segment._id }, 'segment sweep: contact not evaluated')),
          ),
        );
      }
      evaluated += differing.length;
    } catch (err) {
      p.log.warn({ err, segmentId: segment._id }, 'segment sweep: segment not evaluated');
    }
  }
  return { segments: tracked.length, contacts: evaluated };
}

/**
 * Arms the sweep once the actor runtime is up, retrying in the background (in distributed mode
 * the placement may need a moment). Returns a stop function.
 */
export function startSegmentSweep(p: Platform): () => void {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const attempt = async (n: number) => {
    if (stopped) return;
    try {
      await p.actors.invoke(SEGMENT_SWEEP_ACTOR, SEGMENT_SWEEP_ID, 'arm');
    } catch (err) {
      if (stopped) return;
      if (n % 10 === 0) p.log.warn({ err }, 'segment sweep not armed yet; retrying');
      timer = setTimeout(() => void attempt(n + 1), Math.min(1000 * (n + 1), 10_000));
    }
  };
  void attempt(0);
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
