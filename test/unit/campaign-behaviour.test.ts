import { describe, expect, it } from 'vitest';
import {
  CAMPAIGN_STATUSES,
  decide,
  SETTLE_CHECK_MS,
  BATCH_DEFER_MAX_MS,
  BATCHES_AHEAD,
  batchMustWait,
  BATCH_DEFER_MIN_MS,
  BATCH_DEFER_MS,
  type CampaignCommand,
  type CampaignContent,
  type CampaignState,
  type CampaignStatus,
} from '../../actors/campaign/behaviour.ts';
import { recipientEmailId } from '../../domain/campaigns/recipients.ts';
import { AppError } from '../../domain/errors.ts';
import { derivedId, newId } from '../../domain/ids.ts';

const now = new Date('2030-01-01T12:00:00.000Z');
const at = now.toISOString();
const later = '2030-01-01T13:00:00.000Z';
const earlier = '2030-01-01T11:00:00.000Z';

const content: CampaignContent = {
  name: 'Spring sale',
  description: null,
  subject: 'Hi {{name}}',
  body: '<p>Sale</p>',
  from: 'news@shop.example',
  fromName: null,
  replyTo: null,
  audienceType: 'ALL',
  segmentId: null,
  audienceCondition: null,
};

const campaign = (status: CampaignStatus, extra: Partial<CampaignState> = {}): CampaignState => ({
  ...decide(undefined, { kind: 'create', projectId: 'p1', content }, new Date('2029-12-31T00:00:00Z')).state!,
  status,
  ...extra,
});

const audience = { kind: 'ok', size: 3 } as const;

function errorOf(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected an AppError');
}

describe('campaign behaviour: decide', () => {
  it('a new campaign is a DRAFT with nothing queued', () => {
    const { state, effects } = decide(undefined, { kind: 'create', projectId: 'p1', content }, now);
    expect(state).toMatchObject({ ...content, projectId: 'p1', status: 'DRAFT', recipientCount: 0, cursor: null, scheduledFor: null, createdAt: at });
    expect(effects).toEqual([{ kind: 'save' }]);
  });

  it('SEGMENT needs a segmentId and FILTERED a condition; other audience fields are dropped', () => {
    expect(errorOf(() => decide(undefined, { kind: 'create', projectId: 'p', content: { ...content, audienceType: 'SEGMENT' } }, now)).fieldErrors?.[0].field).toBe(
      'segmentId',
    );
    expect(
      errorOf(() => decide(undefined, { kind: 'create', projectId: 'p', content: { ...content, audienceType: 'FILTERED' } }, now)).fieldErrors?.[0].field,
    ).toBe('audienceCondition');
    const { state } = decide(campaign('DRAFT', { segmentId: 's1', audienceType: 'SEGMENT' }), { kind: 'update', changes: { audienceType: 'ALL' } }, now);
    expect(state?.segmentId).toBeNull();
  });

  it('a command to a campaign that does not exist is a 404', () => {
    expect(errorOf(() => decide(undefined, { kind: 'cancel' }, now)).code).toBe('NOT_FOUND');
  });

  const moves: { name: string; command: CampaignCommand; allowed: CampaignStatus[] }[] = [
    { name: 'update', command: { kind: 'update', changes: { name: 'New' } }, allowed: ['DRAFT', 'SCHEDULED'] },
    { name: 'delete', command: { kind: 'delete' }, allowed: ['DRAFT', 'CANCELLED'] },
    { name: 'send', command: { kind: 'send', scheduledFor: null, audience }, allowed: ['DRAFT', 'SCHEDULED'] },
    { name: 'schedule', command: { kind: 'send', scheduledFor: later, audience }, allowed: ['DRAFT', 'SCHEDULED'] },
    { name: 'cancel', command: { kind: 'cancel' }, allowed: ['SCHEDULED', 'SENDING'] },
  ];
  for (const move of moves) {
    for (const status of CAMPAIGN_STATUSES) {
      if (move.allowed.includes(status)) {
        it(`${move.name} is allowed from ${status}`, () => {
          expect(() => decide(campaign(status), move.command, now)).not.toThrow();
        });
      } else {
        it(`${move.name} from ${status} is a 409 INVALID_STATE`, () => {
          const err = errorOf(() => decide(campaign(status), move.command, now));
          expect(err.code).toBe('INVALID_STATE');
          expect(err.statusCode).toBe(409);
        });
      }
    }
  }

  it('send without scheduledFor starts SENDING and wakes at once (the wake-up is set before the save)', () => {
    const { state, effects } = decide(campaign('DRAFT'), { kind: 'send', scheduledFor: null, audience }, now);
    expect(state).toMatchObject({ status: 'SENDING', sentAt: at, cursor: null, audienceExhausted: false, orderedEmailIds: true });
    expect(effects).toEqual([{ kind: 'wake', at }, { kind: 'save' }]);
  });

  it("a send's emails take ids in their contacts' order; one begun on an older version keeps the ids it wrote", () => {
    const contactIds = Array.from({ length: 500 }, () => newId());
    const started = decide(campaign('DRAFT'), { kind: 'send', scheduledFor: null, audience }, now).state!;
    const ids = contactIds.map((contactId) => recipientEmailId(started, 'camp-1', contactId));
    expect([...ids].sort()).toEqual(ids);
    expect(contactIds.map((contactId) => recipientEmailId(started, 'camp-1', contactId))).toEqual(ids);
    // Begun before the state said so: a batch run again after the upgrade finds its emails.
    const { orderedEmailIds: _, ...older } = started;
    expect(recipientEmailId(older, 'camp-1', contactIds[0])).toBe(derivedId('campaign', 'camp-1', contactIds[0]));
  });

  it('send with a future scheduledFor is SCHEDULED with a wake-up at that time', () => {
    const { state, effects } = decide(campaign('DRAFT'), { kind: 'send', scheduledFor: '2030-01-01T14:00:00+01:00', audience }, now);
    expect(state).toMatchObject({ status: 'SCHEDULED', scheduledFor: '2030-01-01T13:00:00.000Z' });
    expect(effects).toEqual([{ kind: 'wake', at: later }, { kind: 'save' }]);
  });

  it('a past scheduledFor, an empty audience or a deleted segment is a 422 naming the field', () => {
    expect(errorOf(() => decide(campaign('DRAFT'), { kind: 'send', scheduledFor: earlier, audience }, now)).fieldErrors?.[0].field).toBe('scheduledFor');
    expect(errorOf(() => decide(campaign('DRAFT'), { kind: 'send', scheduledFor: at, audience }, now)).statusCode).toBe(422);
    expect(errorOf(() => decide(campaign('DRAFT'), { kind: 'send', scheduledFor: null, audience: { kind: 'ok', size: 0 } }, now)).statusCode).toBe(422);
    const gone = errorOf(() => decide(campaign('DRAFT'), { kind: 'send', scheduledFor: null, audience: { kind: 'segmentMissing', segmentId: 's9' } }, now));
    expect(gone.fieldErrors?.[0]).toMatchObject({ field: 'segmentId', code: 'not_found' });
  });

  it('cancel of a SCHEDULED campaign forgets its wake-up; of a SENDING one also skips what is not sent', () => {
    expect(decide(campaign('SCHEDULED'), { kind: 'cancel' }, now)).toMatchObject({ state: { status: 'CANCELLED' }, effects: [{ kind: 'save' }, { kind: 'cancelWake' }] });
    expect(decide(campaign('SENDING'), { kind: 'cancel' }, now).effects).toEqual([{ kind: 'save' }, { kind: 'cancelWake' }, { kind: 'skipUnsent' }]);
  });

  it('delete removes the campaign and its wake-ups', () => {
    expect(decide(campaign('CANCELLED'), { kind: 'delete' }, now)).toEqual({ state: undefined, effects: [{ kind: 'cancelWake' }, { kind: 'deleteCampaign' }] });
  });

  it('a wake-up at the scheduled time starts sending with the first batch', () => {
    const { state, effects } = decide(campaign('SCHEDULED', { scheduledFor: earlier }), { kind: 'wake' }, now);
    expect(state?.status).toBe('SENDING');
    expect(effects).toEqual([{ kind: 'save' }, { kind: 'sendBatch', after: null }]);
  });

  it('an early wake-up of a SCHEDULED campaign sleeps again until the time', () => {
    expect(decide(campaign('SCHEDULED', { scheduledFor: later }), { kind: 'wake' }, now)).toMatchObject({ state: { status: 'SCHEDULED' }, effects: [{ kind: 'wake', at: later }] });
  });

  it('a wake-up while SENDING continues from the saved cursor, or checks outcomes once the audience is exhausted', () => {
    expect(decide(campaign('SENDING', { cursor: 'c9' }), { kind: 'wake' }, now).effects).toEqual([{ kind: 'sendBatch', after: 'c9' }]);
    expect(decide(campaign('SENDING', { audienceExhausted: true }), { kind: 'wake' }, now).effects).toEqual([{ kind: 'checkOutcomes' }]);
  });

  it('a wake-up of a DRAFT campaign does nothing; of a SENT or CANCELLED one, again what ended it after its state (cut off between two stores)', () => {
    expect(decide(campaign('DRAFT'), { kind: 'wake' }, now).effects).toEqual([]);
    const sent = campaign('SENT');
    expect(decide(sent, { kind: 'wake' }, now)).toEqual({ state: sent, effects: [{ kind: 'save' }, { kind: 'cancelWake' }] });
    const cancelled = campaign('CANCELLED');
    expect(decide(cancelled, { kind: 'wake' }, now)).toEqual({ state: cancelled, effects: [{ kind: 'save' }, { kind: 'cancelWake' }, { kind: 'skipUnsent' }] });
  });

  it('a sent batch advances the cursor and wakes for the next one', () => {
    const { state, effects } = decide(campaign('SENDING', { cursor: 'c1', recipientCount: 5 }), { kind: 'batchSent', nextCursor: 'c2', count: 5 }, now);
    expect(state).toMatchObject({ cursor: 'c2', recipientCount: 10, audienceExhausted: false });
    expect(effects).toEqual([{ kind: 'wake', at }, { kind: 'save' }]);
  });

  it('the last batch marks the audience exhausted and checks outcomes', () => {
    const { state, effects } = decide(campaign('SENDING', { recipientCount: 5 }), { kind: 'batchSent', nextCursor: null, count: 2 }, now);
    expect(state).toMatchObject({ recipientCount: 7, audienceExhausted: true });
    expect(effects).toEqual([{ kind: 'save' }, { kind: 'checkOutcomes' }]);
  });

  it('the next batch waits while three batches are in flight', () => {
    expect(BATCHES_AHEAD).toBe(3);
    expect(batchMustWait(1_499, 500)).toBe(false);
    expect(batchMustWait(1_500, 500)).toBe(true);
  });

  it('a deferred batch wakes again without moving the cursor, when about two batches are left in flight', () => {
    const deferred = { kind: 'batchDeferred', inFlight: 1_500, batchSize: 500 } as const;
    const wakeAfter = (ms: number) => [{ kind: 'wake', at: new Date(now.getTime() + ms).toISOString() }];
    const sending = (secondsAgo: number, recipientCount: number) =>
      campaign('SENDING', { cursor: 'c1', recipientCount, sentAt: new Date(now.getTime() - secondsAgo * 1000).toISOString() });
    // Nothing sent yet: no rate to go by.
    const first = decide(sending(1, 1_500), deferred, now);
    expect(first.state?.cursor).toBe('c1');
    expect(first.effects).toEqual(wakeAfter(BATCH_DEFER_MS));
    // 19,000 sent in 10 s (1,900/s): 500 more go in 263 ms.
    expect(decide(sending(10, 20_500), deferred, now).effects).toEqual(wakeAfter(263));
    // 72/s would take 6.9 s; 100,000/s 5 ms: within the bounds.
    expect(decide(sending(100, 8_700), deferred, now).effects).toEqual(wakeAfter(BATCH_DEFER_MAX_MS));
    expect(decide(sending(1, 101_500), deferred, now).effects).toEqual(wakeAfter(BATCH_DEFER_MIN_MS));
    // 100 sent in the first 0.6 s would make it 3 s; the send's start says little, so half of 0.6 s.
    expect(decide(sending(0.6, 1_600), deferred, now).effects).toEqual(wakeAfter(300));
    // Nothing sent 0.2 s after the send began: 0.1 s, not the 0.5 s a rate-less wait takes later on.
    expect(decide(sending(0.2, 1_500), deferred, now).effects).toEqual(wakeAfter(100));
    expect(decide(sending(0.06, 1_500), deferred, now).effects).toEqual(wakeAfter(BATCH_DEFER_MIN_MS));
    expect(decide(campaign('CANCELLED'), deferred, now).effects).toEqual([]);
  });

  it('a batch reported after a cancel changes nothing', () => {
    expect(decide(campaign('CANCELLED'), { kind: 'batchSent', nextCursor: 'x', count: 3 }, now).effects).toEqual([]);
  });

  it('SENDING becomes SENT once every email has an outcome; until then it checks again later', () => {
    const sending = campaign('SENDING', { audienceExhausted: true });
    expect(decide(sending, { kind: 'outcomesChecked', settled: true }, now)).toMatchObject({ state: { status: 'SENT', completedAt: at } });
    expect(decide(sending, { kind: 'outcomesChecked', settled: false }, now)).toMatchObject({
      state: { status: 'SENDING' },
      effects: [{ kind: 'wake', at: new Date(now.getTime() + SETTLE_CHECK_MS).toISOString() }],
    });
    expect(decide(campaign('SENDING'), { kind: 'outcomesChecked', settled: true }, now).state?.status).toBe('SENDING');
  });

  it('an audience that cannot be read any more cancels the campaign with the reason', () => {
    const { state, effects } = decide(campaign('SENDING'), { kind: 'audienceFailed', reason: 'segment gone' }, now);
    expect(state).toMatchObject({ status: 'CANCELLED', cancelReason: 'segment gone' });
    expect(effects).toContainEqual({ kind: 'skipUnsent' });
  });
});
