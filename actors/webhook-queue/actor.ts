// The WebhookQueueActor shell, one per endpoint: it turns its project's outbox into deliveries
// and sends its own due ones, a batch at a time, several at once over kept-alive connections.
// An event's handler only writes the outbox and kicks the queue, and the queue waits while the
// process has no time to spare (runtime/spare-capacity.ts), so the requests come first: deliveries
// made as the events came cost /v1/track half its throughput with 3 endpoints (bench/results/track.md).
//
// The queue runs in the process hosting the actor, outside its turns (a kick answers at once);
// turns only start it and keep its one reminder: while it runs, a watchdog in case the process
// dies; once idle, the time the first retry is due. An outbox entry is written before its kick, so a
// crash loses nothing: the reminder, or the start-up resume (deliveries.ts), runs the queue again.
import { AsyncLocalStorage } from 'node:async_hooks';
import { expandOutbox } from '../../domain/webhooks/deliveries.ts';
import { webhookDeliveries, webhooks } from '../../domain/webhooks/collection.ts';
import type { ActorContext, ActorDefinition } from '../../ports/actors.ts';
import type { Platform } from '../../runtime/platform.ts';
import { spareCapacity } from '../../runtime/spare-capacity.ts';
import { attemptDelivery } from './attempt.ts';

export const WEBHOOK_QUEUE_ACTOR = 'WebhookQueueActor';

/** Deliveries read at a time, and sent at once to one endpoint. */
const BATCH = 100;
const CONCURRENCY = 8;
/** While a queue runs its reminder is this far ahead: a process that dies mid-batch is noticed then. */
const WATCHDOG_MS = 60_000;
/**
 * Its reminder takes turns between two names: a reminder that firing sets itself again could be
 * dropped by the runtime as the firing one is removed, so a firing one sets the other name.
 */
const REMINDERS = ['a', 'b'] as const;
const otherThan = (firing: string | undefined) => (firing === REMINDERS[0] ? REMINDERS[1] : REMINDERS[0]);

interface Running {
  /** A kick came while the queue was reading: read again before stopping. */
  again: boolean;
  done: Promise<void>;
}

export interface WebhookQueues {
  definition: ActorDefinition<never>;
  /** Stops taking batches and waits (briefly) for the ones being sent. */
  stop(): Promise<void>;
}

export function webhookQueues(p: Platform): WebhookQueues {
  const running = new Map<string, Running>();
  let stopping = false;
  // Runs go on after the turn that started them: they run in the context of the platform's start,
  // not in the kick's turn (whose own actor they call at the end) nor in a request's.
  const detached = AsyncLocalStorage.snapshot();

  /** One expansion of a project's outbox at a time in this process (another queue's would find the same entries). */
  const expanding = new Map<string, Promise<number>>();
  const expand = (projectId: string, webhookId: string): Promise<number> => {
    let current = expanding.get(projectId);
    if (!current) {
      current = expandOutbox(p, projectId, webhookId).finally(() => expanding.delete(projectId));
      expanding.set(projectId, current);
    }
    return current;
  };

  const run = async (webhookId: string, self: Running) => {
    const collection = webhookDeliveries(p.store);
    while (!stopping) {
      self.again = false;
      await spareCapacity();
      const webhook = await webhooks(p.store).findOne({ _id: webhookId });
      const expanded = webhook ? await expand(webhook.projectId, webhookId) : 0;
      const due = await collection.find(
        { webhookId, status: 'PENDING', nextAttemptAt: { $lte: new Date().toISOString() } },
        { sort: { nextAttemptAt: 1, _id: 1 }, limit: BATCH },
      );
      if (due.length === 0 && expanded === 0 && !self.again) return;
      for (let i = 0; i < due.length; i += CONCURRENCY) {
        await Promise.all(due.slice(i, i + CONCURRENCY).map((doc) => attemptDelivery(p, doc)));
      }
    }
  };

  /** Starts the queue unless it runs; when it ends, a turn sets its reminder for what is left. */
  const start = (webhookId: string): boolean => {
    const current = running.get(webhookId);
    if (current) {
      current.again = true;
      return false;
    }
    const self: Running = { again: false, done: Promise.resolve() };
    running.set(webhookId, self);
    // The settle is chained inside `detached` too: a run with nothing due can end while the kick
    // that started it still runs, and a settle called from the kick's context was refused as a
    // reentrant call, leaving no reminder for the next retry (a fast restart before it was due).
    self.done = detached(() =>
      run(webhookId, self)
        .catch((err) => {
          if (!stopping) p.log.error({ webhookId, err: (err as Error).message }, 'webhook queue failed; its reminder runs it again');
        })
        .finally(() => {
          running.delete(webhookId);
          if (!stopping) void p.actors.invoke(WEBHOOK_QUEUE_ACTOR, webhookId, 'settle').catch((err) => p.log.warn({ webhookId, err: (err as Error).message }, 'could not set the webhook queue reminder'));
        }),
    );
    return true;
  };

  const kick = async (ctx: ActorContext<never>, firing?: string) => {
    if (start(ctx.id)) await ctx.setReminder(otherThan(firing), new Date(Date.now() + WATCHDOG_MS));
    return null;
  };

  const definition: ActorDefinition<never> = {
    type: WEBHOOK_QUEUE_ACTOR,
    methods: {
      kick: (ctx) => kick(ctx),
      /** After a run: the reminder at the first retry due, or none. A run started meanwhile keeps its watchdog. */
      settle: async (ctx) => {
        if (running.has(ctx.id)) return null;
        const [next] = await webhookDeliveries(p.store).find(
          { webhookId: ctx.id, status: 'PENDING' },
          { sort: { nextAttemptAt: 1, _id: 1 }, limit: 1, projection: { nextAttemptAt: 1 } },
        );
        if (next?.nextAttemptAt && next.nextAttemptAt <= new Date().toISOString()) return kick(ctx);
        if (next?.nextAttemptAt) await ctx.setReminder(REMINDERS[0], new Date(next.nextAttemptAt));
        else await ctx.deleteReminder(REMINDERS[0]);
        await ctx.deleteReminder(REMINDERS[1]);
        return null;
      },
    },
    onReminder: async (ctx, name) => {
      await kick(ctx, name);
    },
  };

  return {
    definition,
    async stop() {
      stopping = true;
      const runs = [...running.values()].map((r) => r.done);
      await Promise.race([Promise.allSettled(runs), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    },
  };
}
