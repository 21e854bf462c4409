// A campaign's turn saves its state, then its projection (what the API and the start-up resume
// read). Distributed, those are two stores (the actor's state in Redis, the projection in MongoDB),
// so a crash or a failed MongoDB write between them leaves the campaign ended in its state and
// SENDING in its projection. Here that leftover is written as such and the platform started on it:
// the resume's wake-up makes the projection say what the state says, and skips a cancelled
// campaign's emails not claimed yet. (Embedded, a turn commits whole; the repair is the same.)
import { expect, it } from 'vitest';
import { ACTOR_STATE_COLLECTION } from '../../adapters/embedded/actor-host.ts';
import { CAMPAIGN_ACTOR } from '../../actors/campaign/actor.ts';
import { decide, type CampaignState } from '../../actors/campaign/behaviour.ts';
import { campaigns } from '../../domain/campaigns/collection.ts';
import { emails } from '../../domain/mail/outbound.ts';
import { bootedPlatform } from '../harness/booted.ts';
import { eventually } from '../harness/client.ts';
import { emailDoc } from '../harness/emails.ts';

const platform = bootedPlatform();

it('a campaign ended in its state and SENDING in its projection is shown ended after a start, its unclaimed emails skipped', async () => {
  const start = () => platform.start({ mailer: false });

  // What the interrupted turns left: the state ended, the projection as the turn before saved it.
  const content = { name: 'News', description: null, subject: 'Hi', body: '<p>Hi</p>', from: 'news@shop.example', fromName: null, replyTo: null, audienceType: 'ALL', segmentId: null, audienceCondition: null } as const;
  const created = decide(undefined, { kind: 'create', projectId: 'p1', content }, new Date('2026-01-01T00:00:00Z')).state!;
  const sending: CampaignState = { ...created, status: 'SENDING', sentAt: '2026-01-01T00:01:00.000Z', recipientCount: 2, audienceExhausted: true };
  const ended = {
    'c-sent': { ...sending, status: 'SENT', completedAt: '2026-01-01T00:02:00.000Z' },
    'c-cancelled': { ...sending, status: 'CANCELLED' },
  } satisfies Record<string, CampaignState>;
  let p = (await start()).platform;
  for (const [id, state] of Object.entries(ended)) {
    await p.store.collection(ACTOR_STATE_COLLECTION).insertOne({ _id: `${CAMPAIGN_ACTOR}/${id}`, type: CAMPAIGN_ACTOR, id, state });
    await campaigns(p.store).insertOne({ _id: id, ...sending });
  }
  // The cancelled one's emails: one sent before the cancel, one its skip never reached.
  const email = (id: string, status: 'DELIVERED' | 'QUEUED') => emailDoc({ _id: id, kind: 'marketing', source: 'campaign', sourceId: 'c-cancelled', status });
  await emails(p).insertMany([email('e-delivered', 'DELIVERED'), email('e-queued', 'QUEUED')]);
  await platform.stop();

  p = (await start()).platform;
  const status = async (id: string) => (await campaigns(p.store).findOne({ _id: id }))?.status;
  await eventually(async () => ((await status('c-sent')) === 'SENT' && (await status('c-cancelled')) === 'CANCELLED') || undefined, 10_000, 'the projections ended');
  expect(await campaigns(p.store).findOne({ _id: 'c-sent' })).toMatchObject({ _id: 'c-sent', ...ended['c-sent'] });
  await eventually(async () => (await emails(p).findOne({ _id: 'e-queued' }))?.status === 'SKIPPED' || undefined, 10_000, 'the unclaimed email skipped');
  expect((await emails(p).findOne({ _id: 'e-delivered' }))?.status).toBe('DELIVERED');
});
