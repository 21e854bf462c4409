// The WorkflowExecutionActor shell: load state and the workflow, decide, perform the effects.
import { executionDoc, toExecution, workflowExecutions, type Execution } from '../../domain/workflows/collection.ts';
import { loadDefinition } from '../../domain/workflows/definition.ts';
import { performStep } from '../../domain/workflows/steps.ts';
import type { ActorContext, ActorDefinition } from '../../ports/actors.ts';
import type { Platform } from '../../runtime/platform.ts';
import { decide, type Definition, type ExecutionCommand, type ExecutionState, type StepDef, type TriggerEvent } from './behaviour.ts';

export const WORKFLOW_EXECUTION_ACTOR = 'WorkflowExecutionActor';

/** Steps one turn may run without a pause; more means a loop without a DELAY or WAIT_FOR_EVENT. */
export const MAX_STEPS_PER_TURN = 100;

type Ctx = ActorContext<ExecutionState>;

/** A command as callers give it; the shell adds the workflow's current definition. */
type Input =
  | { kind: 'start'; projectId: string; workflowId: string; contactId: string; trigger: TriggerEvent }
  | { kind: 'wake' }
  | { kind: 'event'; eventId: string; name: string; createdAt: string }
  | { kind: 'cancel'; reason?: string };

export interface StartInput {
  projectId: string;
  workflowId: string;
  contactId: string;
  trigger: TriggerEvent;
}

export function workflowExecutionActor(p: Platform): ActorDefinition<ExecutionState> {
  const turn = async (ctx: Ctx, input: Input, firing?: string): Promise<Execution | null> => {
    let state = await ctx.loadState();
    // A start that finds its execution (a redelivered trigger, a retry after a failed turn) carries on with it.
    if (input.kind === 'start' && state) input = { kind: 'wake' };
    const workflowId = input.kind === 'start' ? input.workflowId : state?.workflowId;
    let definition: Definition | null | undefined;
    const current = async () => (definition !== undefined ? definition : (definition = workflowId ? await loadDefinition(p.store, workflowId) : null));

    const pending: ExecutionCommand[] = [input.kind === 'cancel' ? input : { ...input, definition: await current() }];
    let performed = 0;
    while (pending.length > 0) {
      const decision = decide(state, pending.shift()!, new Date());
      state = decision.state;
      for (const effect of decision.effects) {
        switch (effect.kind) {
          case 'save':
            // The projection first: a turn that fails between the two writes is decided again from the older state.
            await workflowExecutions(p.store).replaceOne({ _id: ctx.id }, executionDoc(ctx.id, state!), { upsert: true });
            await ctx.saveState(state!);
            break;
          case 'remind':
            // Never re-register the reminder that is firing from inside its own callback.
            await ctx.setReminder(effect.name === firing ? `${effect.name}x` : effect.name, new Date(effect.at));
            break;
          case 'cancelReminder':
            await ctx.deleteReminder(effect.name).catch((err) => p.log.debug({ err, executionId: ctx.id }, 'execution reminder not deleted'));
            break;
          case 'perform': {
            if (++performed > MAX_STEPS_PER_TURN) {
              pending.push({ kind: 'runaway', reason: `More than ${MAX_STEPS_PER_TURN} steps in a row without a DELAY or WAIT_FOR_EVENT: the workflow loops` });
              break;
            }
            const next = await perform(p, ctx, state!, effect.step, effect.visit, await current());
            if (next) pending.push(next);
            break;
          }
        }
      }
    }
    return state ? toExecution(executionDoc(ctx.id, state)) : null;
  };

  return {
    type: WORKFLOW_EXECUTION_ACTOR,
    methods: {
      start: (ctx, input: StartInput) => turn(ctx, { kind: 'start', ...input }),
      /** What a reminder does; also the start-up resume, so a lost reminder cannot strand an execution. */
      wake: (ctx) => turn(ctx, { kind: 'wake' }),
      event: (ctx, input: { eventId: string; name: string; createdAt: string }) => turn(ctx, { kind: 'event', ...input }),
      cancel: (ctx, input: { reason?: string } | undefined) => turn(ctx, { kind: 'cancel', reason: input?.reason }),
    },
    onReminder: async (ctx, name) => {
      await turn(ctx, { kind: 'wake' }, name);
    },
  };
}

/**
 * Runs an action step and turns its outcome into the next command. A step that throws (anything
 * but a rule of the product) is `stepThrew`: tried again by reminder, whoever started this turn
 * (a trigger, an event, a reminder), until the same failure has come too many times in a row.
 */
async function perform(p: Platform, ctx: Ctx, state: ExecutionState, step: StepDef, visit: number, definition: Definition | null): Promise<ExecutionCommand | undefined> {
  try {
    const outcome = await performStep(p, ctx.id, state, step, visit);
    if (outcome.ok) return { kind: 'stepDone', stepId: step.id, branch: outcome.branch, definition };
    return { kind: 'stepFailed', stepId: step.id, reason: outcome.reason, retryable: outcome.retryable, maxAttempts: p.config.webhookAttempts, definition };
  } catch (err) {
    p.log.warn({ err, executionId: ctx.id, stepId: step.id }, 'workflow step failed; trying again');
    const reason = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    return { kind: 'stepThrew', stepId: step.id, reason: reason.slice(0, 500), definition };
  }
}
