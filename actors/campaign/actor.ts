// The CampaignActor shell: load state, decide, perform the effects. Nothing else.
import { audienceOf, checkAudience, nextRecipients, SegmentGoneError } from '../../domain/campaigns/audience.ts';
import { campaigns, toCampaign, type Campaign } from '../../domain/campaigns/collection.ts';
import { queueRecipients } from '../../domain/campaigns/recipients.ts';
import { emails } from '../../domain/mail/outbound.ts';
import type { ActorContext, ActorDefinition } from '../../ports/actors.ts';
import type { Platform } from '../../runtime/platform.ts';
import { batchMustWait, decide, type CampaignCommand, type CampaignContent, type CampaignEffect, type CampaignState } from './behaviour.ts';

export const CAMPAIGN_ACTOR = 'CampaignActor';

/**
 * Two alternating reminder names: a wake-up sets the next one under the other name, so no
 * runtime ever sees a one-shot reminder re-register itself from inside its own callback.
 */
const WAKE = ['wake-0', 'wake-1'] as const;

type Ctx = ActorContext<CampaignState>;

export function campaignActor(p: Platform): ActorDefinition<CampaignState> {
  /** One turn: decide, perform; effects that learn something (a batch, a count) decide again. */
  const turn = async (ctx: Ctx, first: CampaignCommand, firing?: string): Promise<Campaign | null> => {
    let state = await ctx.loadState();
    const pending: CampaignCommand[] = [first];
    while (pending.length > 0) {
      const decision = decide(state, pending.shift()!, new Date());
      state = decision.state;
      for (const effect of decision.effects) {
        const next = await perform(p, ctx, state, effect, firing);
        if (next) pending.push(next);
      }
    }
    return state ? toCampaign({ _id: ctx.id, ...state }) : null;
  };

  return {
    type: CAMPAIGN_ACTOR,
    methods: {
      create: (ctx, input: { projectId: string; content: CampaignContent }) => turn(ctx, { kind: 'create', ...input }),
      update: (ctx, input: { changes: Partial<CampaignContent> }) => turn(ctx, { kind: 'update', ...input }),
      delete: (ctx) => turn(ctx, { kind: 'delete' }),
      cancel: (ctx) => turn(ctx, { kind: 'cancel' }),
      /** What a reminder does; also called at start-up, so a lost reminder cannot strand a campaign. */
      wake: (ctx) => turn(ctx, { kind: 'wake' }),
      send: async (ctx, input: { scheduledFor: string | null }) => {
        const state = await ctx.loadState();
        const audience = state ? await checkAudience(p, state, new Date()) : { kind: 'ok' as const, size: 0 };
        return turn(ctx, { kind: 'send', scheduledFor: input.scheduledFor, audience });
      },
    },
    onReminder: async (ctx, name) => {
      await turn(ctx, { kind: 'wake' }, name);
    },
  };
}

async function perform(p: Platform, ctx: Ctx, state: CampaignState | undefined, effect: CampaignEffect, firing?: string): Promise<CampaignCommand | undefined> {
  switch (effect.kind) {
    case 'save':
      await ctx.saveState(state!);
      await campaigns(p.store).replaceOne({ _id: ctx.id }, { _id: ctx.id, ...state! }, { upsert: true });
      return;
    case 'deleteCampaign':
      await campaigns(p.store).deleteOne({ _id: ctx.id });
      await ctx.deleteState();
      return;
    case 'wake':
      await ctx.setReminder(firing === WAKE[0] ? WAKE[1] : WAKE[0], new Date(effect.at));
      return;
    case 'cancelWake':
      for (const name of WAKE) {
        if (name === firing) continue; // a one-shot reminder is gone once its callback returns
        try {
          await ctx.deleteReminder(name);
        } catch (err) {
          // Only a wake-up left over; it finds nothing to do.
          p.log.debug({ err, campaignId: ctx.id, name }, 'campaign reminder not deleted');
        }
      }
      return;
    case 'sendBatch': {
      const campaign = state!;
      // Backpressure: the audience is walked about as fast as the mailer sends, so the outbound
      // queue stays small, a cancel still stops most of a large send, and the cursor means something.
      // Recipients queued per turn: CAMPAIGN_BATCH_SIZE (tests use small batches).
      const batchSize = p.config.campaignBatchSize;
      const inFlight = await emailsInFlight(p, campaign.projectId, ctx.id);
      if (batchMustWait(inFlight, batchSize)) return { kind: 'batchDeferred', inFlight, batchSize };
      try {
        const audience = await audienceOf(p, campaign, new Date(campaign.sentAt ?? Date.now()));
        const { recipients, nextCursor } = await nextRecipients(p, campaign, audience, effect.after, batchSize);
        const count = await queueRecipients(p, ctx.id, campaign, recipients, new Date().toISOString());
        return { kind: 'batchSent', nextCursor, count };
      } catch (err) {
        if (err instanceof SegmentGoneError) return { kind: 'audienceFailed', reason: err.message };
        throw err;
      }
    }
    case 'checkOutcomes': {
      const open = await emailsInFlight(p, state!.projectId, ctx.id);
      return { kind: 'outcomesChecked', settled: open === 0 };
    }
    case 'skipUnsent':
      await emails(p).updateMany(
        { projectId: state!.projectId, sourceId: ctx.id, status: 'QUEUED' },
        { $set: { status: 'SKIPPED', reason: 'The campaign was cancelled before this email was sent' } },
      );
      return;
  }
}

/**
 * The campaign's emails not sent yet (QUEUED or SENDING), counted before each batch. Two counts of
 * equalities, not one with `status: {$in}`: MongoDB serves either from {projectId, sourceId,
 * status}, but FerretDB pushes down only equalities, and with `$in` read every email of the
 * campaign at each batch (a cost that grew with the campaign).
 */
async function emailsInFlight(p: Platform, projectId: string, campaignId: string): Promise<number> {
  // QUEUED first: an email only moves on (QUEUED → SENDING → done), so one still open after both
  // counts was counted at least once; one that moved in between may be counted twice, which only
  // holds the next batch or check back.
  const queued = await emails(p).countDocuments({ projectId, sourceId: campaignId, status: 'QUEUED' });
  return queued + (await emails(p).countDocuments({ projectId, sourceId: campaignId, status: 'SENDING' }));
}

/**
 * At start-up, wakes every campaign that is sending or scheduled. Its reminder should do that,
 * but a reminder is one record in one runtime; this makes a restart resume a send regardless
 * (seen on Dapr: a reminder pending while the app and its sidecar restarted together was not
 * delivered). A wake the campaign does not need changes nothing.
 */
export async function resumeCampaigns(p: Platform): Promise<void> {
  const waiting = await campaigns(p.store).find({ status: { $in: ['SENDING', 'SCHEDULED'] } }, { projection: { _id: 1 } });
  for (const { _id } of waiting) {
    for (let attempt = 1; ; attempt++) {
      try {
        await p.actors.invoke(CAMPAIGN_ACTOR, _id, 'wake');
        break;
      } catch (err) {
        // Right after a restart the runtime may not place actors yet: try again for a while.
        if (attempt >= 30) {
          p.log.error({ campaignId: _id, err: (err as Error).message }, 'could not resume a campaign');
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  }
}
