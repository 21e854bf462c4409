// The life of one campaign as a pure function: no I/O, no clock, no runtime imports.
import { AppError, invalid } from '../../domain/errors.ts';
import type { FilterCondition } from '../../domain/segments/filter.ts';

import { CANCELLABLE, DELETABLE, EDITABLE, SENDABLE, type AudienceType, type CampaignStatus } from './states.ts';

export { AUDIENCE_TYPES, CAMPAIGN_STATUSES, type AudienceType, type CampaignStatus } from './states.ts';

/** What a user writes: the campaign's content and audience. Copied whole by duplicate. */
export interface CampaignContent {
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
}

export interface CampaignState extends CampaignContent {
  projectId: string;
  status: CampaignStatus;
  scheduledFor: string | null;
  /** When sending began (the audience is read as of this instant). */
  sentAt: string | null;
  /** When every queued email had its final outcome (SENDING → SENT). */
  completedAt: string | null;
  /** Recipients queued so far. */
  recipientCount: number;
  /** The `_id` of the last contact queued; the next batch starts after it. */
  cursor: string | null;
  /** Every batch has been queued; what is left is waiting for outcomes. */
  audienceExhausted: boolean;
  /** Why a campaign stopped on its own (its segment was deleted before or while sending). */
  cancelReason: string | null;
  /**
   * Its emails' ids follow their contacts' order (recipients.ts). Set when sending begins; absent
   * on a campaign whose send began on an older version, whose batch cut off by a restart must find
   * the ids it wrote when it runs again.
   */
  orderedEmailIds?: true;
  createdAt: string;
  updatedAt: string;
}

/** What the shell found when it sized the audience for a send. */
export type AudienceCheck = { kind: 'ok'; size: number } | { kind: 'segmentMissing'; segmentId: string };

export type CampaignCommand =
  | { kind: 'create'; projectId: string; content: CampaignContent }
  | { kind: 'update'; changes: Partial<CampaignContent> }
  | { kind: 'delete' }
  | { kind: 'send'; scheduledFor: string | null; audience: AudienceCheck }
  | { kind: 'cancel' }
  /** A reminder fired: do whatever the state says is next (start, next batch, check outcomes). */
  | { kind: 'wake' }
  | { kind: 'batchSent'; nextCursor: string | null; count: number }
  /** The mailer has not caught up with the batches already queued (`inFlight` of them): try again shortly. */
  | { kind: 'batchDeferred'; inFlight: number; batchSize: number }
  | { kind: 'outcomesChecked'; settled: boolean }
  /** The audience cannot be read any more (its segment is gone). */
  | { kind: 'audienceFailed'; reason: string };

export type CampaignEffect =
  /** Persist the state (actor state and the `campaigns` projection). */
  | { kind: 'save' }
  | { kind: 'deleteCampaign' }
  /** Wake the actor at `at` (one reminder; setting it again replaces it). */
  | { kind: 'wake'; at: string }
  | { kind: 'cancelWake' }
  /** Queue the next batch of recipients after `after` (contact `_id`), then report `batchSent`. */
  | { kind: 'sendBatch'; after: string | null }
  /** Count the campaign's emails without a final outcome, then report `outcomesChecked`. */
  | { kind: 'checkOutcomes' }
  /** Emails queued but not yet claimed by the mailer become SKIPPED (a cancel mid-send). */
  | { kind: 'skipUnsent' };

export interface Decision {
  state: CampaignState | undefined;
  effects: CampaignEffect[];
}

/** While SENDING with the whole audience queued, outcomes are checked this often. */
export const SETTLE_CHECK_MS = 2_000;
/**
 * How far a campaign queues ahead of the mailer: the next batch waits while this many batches of
 * its emails are still QUEUED or SENDING, and the wait lasts until about one batch fewer is left
 * (so a batch is always queued before the mailer runs dry). Two ahead, waiting until one was
 * left, let a platform's first campaign after a start run dry again and again: its rate climbs
 * (some 300 emails/s in its first second, 1,700 later), so the rate since the send began, which
 * sets the wait, was well below the mailer's, and each wait outlasted the emails left
 * (bench/results/campaign-profile.md, session 25).
 */
export const BATCHES_AHEAD = 3;

/** Whether the next batch waits: the mailer has `BATCHES_AHEAD` of them to send already. */
export const batchMustWait = (inFlight: number, batchSize: number): boolean => inFlight >= BATCHES_AHEAD * batchSize;

/**
 * How long a batch waits when the mailer has not caught up with the previous ones: until about
 * `BATCHES_AHEAD - 1` batches are left in flight, at the rate the campaign has been sent so far
 * (BATCH_DEFER_MS before any email has gone), and never longer than half the time since the send
 * began (early on, that rate says little; a warm mailer sends three batches in under 0.5 s),
 * within these bounds. A fixed 500 ms let a mailer sending 1,760 emails/s run nearly dry between
 * batches of 500 (1,947/s with batches of 1,000); at 72/s (distributed) it counted the emails in
 * flight some 14 times per batch sent.
 */
export const BATCH_DEFER_MS = 500;
export const BATCH_DEFER_MIN_MS = 50;
export const BATCH_DEFER_MAX_MS = 2_000;

function batchDeferMs(state: CampaignState, inFlight: number, batchSize: number, now: Date): number {
  const elapsed = now.getTime() - Date.parse(state.sentAt ?? '');
  if (!(elapsed > 0)) return BATCH_DEFER_MS;
  const sent = state.recipientCount - inFlight;
  const untilOneBatchFewer = sent > 0 ? ((inFlight - (BATCHES_AHEAD - 1) * batchSize) / sent) * elapsed : BATCH_DEFER_MS;
  return Math.round(Math.max(BATCH_DEFER_MIN_MS, Math.min(BATCH_DEFER_MAX_MS, elapsed / 2, untilOneBatchFewer)));
}

const forbidden = (action: string, status: CampaignStatus, allowed: readonly CampaignStatus[]) =>
  new AppError('INVALID_STATE', `A ${status} campaign cannot be ${action}`, {
    suggestion: `Only a campaign in ${allowed.join(' or ')} can be ${action}.`,
  });

const unchanged = (state: CampaignState | undefined): Decision => ({ state, effects: [] });

/**
 * What follows the state that ends a campaign: its projection, no more wake-ups and, with
 * `skipUnsent`, its emails not claimed yet skipped. A wake-up that finds the campaign ended does
 * them again: the turn that ended it may have stopped after the state and before the projection
 * (distributed, two stores: a crash, or MongoDB failing the write), which then said SENDING for
 * good, to the API and to the start-up resume, of a campaign that would do nothing more.
 */
const ending = (skipUnsent: boolean): CampaignEffect[] => [{ kind: 'save' }, { kind: 'cancelWake' }, ...(skipUnsent ? [{ kind: 'skipUnsent' } as const] : [])];

/**
 * Keeps the audience fields coherent: only the field the audience type reads is kept, and the
 * one it needs must be there.
 */
function withAudience(content: CampaignContent): CampaignContent {
  if (content.audienceType === 'SEGMENT' && !content.segmentId) throw invalid('segmentId', 'segmentId is required when audienceType is SEGMENT', 'required');
  if (content.audienceType === 'FILTERED' && !content.audienceCondition) {
    throw invalid('audienceCondition', 'audienceCondition is required when audienceType is FILTERED', 'required');
  }
  return {
    ...content,
    segmentId: content.audienceType === 'SEGMENT' ? content.segmentId : null,
    audienceCondition: content.audienceType === 'FILTERED' ? content.audienceCondition : null,
  };
}

export function decide(state: CampaignState | undefined, command: CampaignCommand, now: Date): Decision {
  const at = now.toISOString();
  if (command.kind === 'create') {
    if (state) throw new AppError('CONFLICT', 'The campaign exists already');
    return {
      state: {
        ...withAudience(command.content),
        projectId: command.projectId,
        status: 'DRAFT',
        scheduledFor: null,
        sentAt: null,
        completedAt: null,
        recipientCount: 0,
        cursor: null,
        audienceExhausted: false,
        cancelReason: null,
        createdAt: at,
        updatedAt: at,
      },
      effects: [{ kind: 'save' }],
    };
  }
  if (!state) throw new AppError('NOT_FOUND', 'Campaign not found');
  const { status } = state;

  switch (command.kind) {
    case 'update': {
      if (!EDITABLE.includes(status)) throw forbidden('updated', status, EDITABLE);
      const content = withAudience({ ...contentOf(state), ...definedOnly(command.changes) });
      return { state: { ...state, ...content, updatedAt: at }, effects: [{ kind: 'save' }] };
    }

    case 'delete': {
      if (!DELETABLE.includes(status)) throw forbidden('deleted', status, DELETABLE);
      return { state: undefined, effects: [{ kind: 'cancelWake' }, { kind: 'deleteCampaign' }] };
    }

    case 'send': {
      if (!SENDABLE.includes(status)) throw forbidden('sent', status, SENDABLE);
      const when = command.scheduledFor === null ? null : Date.parse(command.scheduledFor);
      if (when !== null && (Number.isNaN(when) || when <= now.getTime())) {
        throw invalid('scheduledFor', 'scheduledFor must be in the future; omit it or send null to send now', 'in_past');
      }
      if (command.audience.kind === 'segmentMissing') {
        throw invalid('segmentId', `The campaign's segment ${command.audience.segmentId} no longer exists`, 'not_found');
      }
      if (command.audience.size === 0) throw invalid('audienceType', 'The audience has no subscribed contacts', 'empty_audience');
      if (when !== null) {
        const scheduledFor = new Date(when).toISOString();
        // The wake-up is set before the state that needs it is saved: a crash in between leaves a
        // harmless early wake-up, never a SCHEDULED campaign that nothing will start.
        return { state: { ...state, status: 'SCHEDULED', scheduledFor, updatedAt: at }, effects: [{ kind: 'wake', at: scheduledFor }, { kind: 'save' }] };
      }
      return { state: startSending(state, at), effects: [{ kind: 'wake', at }, { kind: 'save' }] };
    }

    case 'cancel': {
      if (!CANCELLABLE.includes(status)) throw forbidden('cancelled', status, CANCELLABLE);
      // Saved first: a wake-up that still fires finds a CANCELLED campaign and sends nothing.
      return { state: { ...state, status: 'CANCELLED', updatedAt: at }, effects: ending(status === 'SENDING') };
    }

    case 'wake': {
      if (status === 'SCHEDULED') {
        // Woken early (clock skew, a stale wake-up): sleep again until the time.
        if (state.scheduledFor && Date.parse(state.scheduledFor) > now.getTime()) return { state, effects: [{ kind: 'wake', at: state.scheduledFor }] };
        return { state: startSending(state, at), effects: [{ kind: 'save' }, { kind: 'sendBatch', after: null }] };
      }
      // Ended: only what its last turn may not have finished (a CANCELLED one's emails skipped
      // whether it was sending or not: none are queued if it was not).
      if (status === 'SENT' || status === 'CANCELLED') return { state, effects: ending(status === 'CANCELLED') };
      if (status !== 'SENDING') return unchanged(state);
      if (!state.audienceExhausted) return { state, effects: [{ kind: 'sendBatch', after: state.cursor }] };
      return { state, effects: [{ kind: 'checkOutcomes' }] };
    }

    case 'batchSent': {
      if (status !== 'SENDING' || state.audienceExhausted) return unchanged(state);
      const recipientCount = state.recipientCount + command.count;
      if (command.nextCursor === null) {
        return { state: { ...state, recipientCount, audienceExhausted: true, updatedAt: at }, effects: [{ kind: 'save' }, { kind: 'checkOutcomes' }] };
      }
      // One batch per turn: the next one is a fresh turn, so a cancel can get in between.
      return {
        state: { ...state, recipientCount, cursor: command.nextCursor, updatedAt: at },
        effects: [{ kind: 'wake', at }, { kind: 'save' }],
      };
    }

    case 'batchDeferred': {
      if (status !== 'SENDING' || state.audienceExhausted) return unchanged(state);
      const wait = batchDeferMs(state, command.inFlight, command.batchSize, now);
      return { state, effects: [{ kind: 'wake', at: new Date(now.getTime() + wait).toISOString() }] };
    }

    case 'outcomesChecked': {
      if (status !== 'SENDING' || !state.audienceExhausted) return unchanged(state);
      if (command.settled) return { state: { ...state, status: 'SENT', completedAt: at, updatedAt: at }, effects: ending(false) };
      return { state, effects: [{ kind: 'wake', at: new Date(now.getTime() + SETTLE_CHECK_MS).toISOString() }] };
    }

    case 'audienceFailed': {
      if (status !== 'SCHEDULED' && status !== 'SENDING') return unchanged(state);
      return { state: { ...state, status: 'CANCELLED', cancelReason: command.reason, updatedAt: at }, effects: ending(status === 'SENDING') };
    }
  }
}

function startSending(state: CampaignState, at: string): CampaignState {
  return {
    ...state,
    status: 'SENDING',
    sentAt: at,
    orderedEmailIds: true,
    recipientCount: 0,
    cursor: null,
    audienceExhausted: false,
    updatedAt: at,
  };
}

export function contentOf(state: CampaignContent): CampaignContent {
  const { name, description, subject, body, from, fromName, replyTo, audienceType, segmentId, audienceCondition } = state;
  return { name, description, subject, body, from, fromName, replyTo, audienceType, segmentId, audienceCondition };
}

function definedOnly<T extends object>(changes: T): Partial<T> {
  return Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) as Partial<T>;
}
