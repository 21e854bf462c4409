// The life of one workflow execution as a pure function: no I/O, no clock, no runtime imports.
// The shell (actor.ts) loads the workflow's steps and transitions and hands them in with each
// command; it performs the effects, and reports what an action step did as the next command.
import { AppError } from '../../domain/errors.ts';

export const EXECUTION_STATUSES = ['PENDING', 'RUNNING', 'WAITING', 'COMPLETED', 'CANCELLED', 'FAILED'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
export const IN_PROGRESS: ExecutionStatus[] = ['RUNNING', 'WAITING'];

export const STEP_TYPES = ['TRIGGER', 'SEND_EMAIL', 'DELAY', 'WAIT_FOR_EVENT', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT', 'EXIT'] as const;
export type StepType = (typeof STEP_TYPES)[number];

/** The outcome of a branching step; transitions choose by `condition.branch`. */
export type Branch = 'yes' | 'no' | 'event' | 'timeout';

export const DELAY_UNITS = ['seconds', 'minutes', 'hours', 'days', 'weeks'] as const;
export type DelayUnit = (typeof DELAY_UNITS)[number];
const UNIT_MS: Record<DelayUnit, number> = { seconds: 1_000, minutes: 60_000, hours: 3_600_000, days: 86_400_000, weeks: 604_800_000 };

export interface StepDef {
  id: string;
  type: StepType;
  config: Record<string, unknown>;
}

export interface TransitionDef {
  id: string;
  fromStepId: string;
  toStepId: string;
  condition: { branch?: Branch } | null;
  priority: number | null;
}

/** The workflow as it is now; null when the workflow was deleted. */
export interface Definition {
  steps: StepDef[];
  transitions: TransitionDef[];
}

/** The event that started the execution; its data includes the non-persistent values. */
export interface TriggerEvent {
  eventId: string;
  name: string;
  data: Record<string, unknown>;
}

export interface Wait {
  /** When the reminder fires: the end of a DELAY, a WAIT_FOR_EVENT timeout, a retry or a deferred run. */
  until: string;
  /** WAIT_FOR_EVENT: the awaited event name, and when the wait began (older events do not count). */
  eventName?: string;
  since?: string;
  reminder: string;
}

export interface ExecutionState {
  projectId: string;
  workflowId: string;
  contactId: string;
  status: ExecutionStatus;
  /** The step the execution is at (running, or waiting in). */
  stepId: string | null;
  trigger: TriggerEvent;
  wait: Wait | null;
  /** Steps entered so far: numbers each visit of a step, for idempotent effects and reminder names. */
  visits: number;
  /**
   * The steps entered, in order, TRIGGER first (the last PATH_LIMIT of them): the execution's path
   * through the graph, which the dashboard draws. Absent in states saved before it was kept.
   */
  path?: string[];
  /** Failed attempts of the current step (WEBHOOK retries). */
  attempts: number;
  /** The current step's last thrown failure and how many times in a row it came (absent in older states). */
  failure?: { reason: string; count: number } | null;
  /** Why it ended: EXIT's reason, a failure, a cancellation. */
  reason: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

export type ExecutionCommand =
  | { kind: 'start'; projectId: string; workflowId: string; contactId: string; trigger: TriggerEvent; definition: Definition | null }
  /** A reminder fired, or the start-up resume: do what is due. */
  | { kind: 'wake'; definition: Definition | null }
  /** An event was recorded for the contact. */
  | { kind: 'event'; eventId: string; name: string; createdAt: string; definition: Definition | null }
  /** The shell performed the current action step. */
  | { kind: 'stepDone'; stepId: string; branch?: Branch; definition: Definition | null }
  | { kind: 'stepFailed'; stepId: string; reason: string; retryable: boolean; maxAttempts: number; definition: Definition | null }
  /** The step threw: the store, the runtime, or a defect; which one shows only by repetition. */
  | { kind: 'stepThrew'; stepId: string; reason: string; definition: Definition | null }
  /** Too many steps in one turn without a pause (a loop in the workflow). */
  | { kind: 'runaway'; reason: string }
  | { kind: 'cancel'; reason?: string };

export type ExecutionEffect =
  /** Persist the state: actor state and the `workflow_executions` projection. */
  | { kind: 'save' }
  | { kind: 'remind'; name: string; at: string }
  | { kind: 'cancelReminder'; name: string }
  /** Run an action step (SEND_EMAIL, CONDITION, WEBHOOK, UPDATE_CONTACT); report stepDone/stepFailed. */
  | { kind: 'perform'; step: StepDef; visit: number };

export interface Decision {
  state: ExecutionState | undefined;
  effects: ExecutionEffect[];
}

/** Retry delays of a failing WEBHOOK step, by failed attempt (the last one repeats). */
export const RETRY_DELAYS_MS = [1_000, 5_000, 15_000, 60_000];
/** Retry delays of a step that threw, by failure of the same reason in a row (the last one repeats). */
export const THREW_RETRY_DELAYS_MS = [2_000, 10_000, 60_000, 300_000, 900_000];
/**
 * The same failure this many times in a row (about 50 minutes with the delays above) is no
 * outage but a step that cannot succeed: the execution fails with it instead of retrying for ever.
 */
export const SAME_FAILURE_LIMIT = 8;
/** How many entered steps an execution keeps as its path (a loop through a DELAY could go on for ever). */
export const PATH_LIMIT = 200;

const ACTION_STEPS: StepType[] = ['SEND_EMAIL', 'CONDITION', 'WEBHOOK', 'UPDATE_CONTACT'];
/** Steps run in a turn of their own (a reminder), so a slow endpoint never holds the turn that reached them. */
const DEFERRED_STEPS: StepType[] = ['WEBHOOK'];

const unchanged = (state: ExecutionState | undefined): Decision => ({ state, effects: [] });
const inProgress = (state: ExecutionState) => IN_PROGRESS.includes(state.status);

export function decide(state: ExecutionState | undefined, command: ExecutionCommand, now: Date): Decision {
  const at = now.toISOString();

  if (command.kind === 'start') {
    // A redelivered trigger finds the execution it started: nothing happens twice.
    if (state || !command.definition) return unchanged(state);
    const trigger = command.definition.steps.find((s) => s.type === 'TRIGGER');
    const fresh: ExecutionState = {
      projectId: command.projectId,
      workflowId: command.workflowId,
      contactId: command.contactId,
      status: 'RUNNING',
      stepId: trigger?.id ?? null,
      trigger: command.trigger,
      wait: null,
      visits: 0,
      path: trigger ? [trigger.id] : [],
      attempts: 0,
      reason: null,
      createdAt: at,
      updatedAt: at,
      completedAt: null,
    };
    if (!trigger) return finish(fresh, 'FAILED', 'The workflow has no TRIGGER step', at);
    return withSave(advance(fresh, trigger.id, undefined, command.definition, now));
  }

  if (!state) {
    if (command.kind === 'cancel') throw new AppError('NOT_FOUND', 'Execution not found');
    return unchanged(state);
  }

  if (command.kind === 'cancel') {
    if (!inProgress(state)) {
      throw new AppError('INVALID_STATE', `A ${state.status} execution cannot be cancelled`, { suggestion: 'Only a RUNNING or WAITING execution can be cancelled.' });
    }
    const done = finish(state, 'CANCELLED', command.reason ?? 'Cancelled', at);
    return { state: done.state, effects: [...done.effects, ...(state.wait ? [{ kind: 'cancelReminder' as const, name: state.wait.reminder }] : [])] };
  }

  if (!inProgress(state)) return unchanged(state);
  if (command.kind === 'runaway') return finish(state, 'FAILED', command.reason, at);

  const definition = command.definition;
  if (!definition) return finish(state, 'CANCELLED', 'The workflow was deleted', at);
  const current = definition.steps.find((s) => s.id === state.stepId);

  switch (command.kind) {
    case 'wake': {
      if (state.wait && Date.parse(state.wait.until) > now.getTime()) {
        // Woken early (the start-up resume, a stale reminder): sleep again until the time.
        return { state, effects: [{ kind: 'remind', name: state.wait.reminder, at: state.wait.until }] };
      }
      if (!current) return finish(state, 'FAILED', `Step ${state.stepId} was removed from the workflow`, at);
      if (state.status === 'WAITING') {
        if (current.type === 'DELAY') return advance({ ...state, wait: null }, current.id, undefined, definition, now);
        if (current.type === 'WAIT_FOR_EVENT') return advance({ ...state, wait: null }, current.id, 'timeout', definition, now);
        return finish(state, 'FAILED', `Step ${current.id} (${current.type}) does not wait`, at);
      }
      // RUNNING: a deferred step, a retry, or a turn that ended before its step reported.
      if (current.type === 'TRIGGER') return advance(state, current.id, undefined, definition, now);
      if (!ACTION_STEPS.includes(current.type)) return enter(state, current, definition, now, false);
      return { state: { ...state, wait: null }, effects: [{ kind: 'perform', step: current, visit: state.visits }] };
    }

    case 'event': {
      const wait = state.wait;
      if (state.status !== 'WAITING' || !wait?.eventName || wait.eventName !== command.name) return unchanged(state);
      // The trigger itself, or an event recorded before the wait began, does not end it.
      if (command.eventId === state.trigger.eventId || (wait.since && command.createdAt < wait.since)) return unchanged(state);
      if (!current) return finish(state, 'FAILED', `Step ${state.stepId} was removed from the workflow`, at);
      const next = advance({ ...state, wait: null }, current.id, 'event', definition, now);
      return { state: next.state, effects: [{ kind: 'cancelReminder', name: wait.reminder }, ...next.effects] };
    }

    case 'stepDone': {
      if (state.status !== 'RUNNING' || state.stepId !== command.stepId) return unchanged(state);
      return advance(state, command.stepId, command.branch, definition, now);
    }

    case 'stepFailed': {
      if (state.status !== 'RUNNING' || state.stepId !== command.stepId) return unchanged(state);
      const attempts = state.attempts + 1;
      if (!command.retryable || attempts >= command.maxAttempts) {
        const tries = attempts > 1 ? ` (after ${attempts} attempts)` : '';
        return finish({ ...state, attempts }, 'FAILED', `${command.reason}${tries}`, at);
      }
      const until = new Date(now.getTime() + RETRY_DELAYS_MS[Math.min(attempts - 1, RETRY_DELAYS_MS.length - 1)]).toISOString();
      const reminder = `r${state.visits}.${attempts}`;
      return {
        state: { ...state, attempts, wait: { until, reminder }, updatedAt: at },
        effects: [{ kind: 'remind', name: reminder, at: until }, { kind: 'save' }],
      };
    }

    case 'stepThrew': {
      if (state.status !== 'RUNNING' || state.stepId !== command.stepId) return unchanged(state);
      const count = state.failure?.reason === command.reason ? state.failure.count + 1 : 1;
      const failure = { reason: command.reason, count };
      if (count >= SAME_FAILURE_LIMIT) {
        return finish({ ...state, failure }, 'FAILED', `Step ${command.stepId} failed the same way ${count} times in a row: ${command.reason}`, at);
      }
      const until = new Date(now.getTime() + THREW_RETRY_DELAYS_MS[Math.min(count - 1, THREW_RETRY_DELAYS_MS.length - 1)]).toISOString();
      const reminder = `t${state.visits}.${count}`;
      // The reminder first: should the store be what fails, the save fails too, and the retry must still come.
      return {
        state: { ...state, failure, wait: { until, reminder }, updatedAt: at },
        effects: [{ kind: 'remind', name: reminder, at: until }, { kind: 'save' }],
      };
    }
  }
}

/** Leaves `fromStepId` by the first transition (lowest priority first) whose condition holds. */
function advance(state: ExecutionState, fromStepId: string, branch: Branch | undefined, definition: Definition, now: Date): Decision {
  const transition = nextTransition(definition.transitions, fromStepId, branch);
  if (!transition) return finish(state, 'COMPLETED', null, now.toISOString());
  const step = definition.steps.find((s) => s.id === transition.toStepId);
  if (!step) return finish(state, 'FAILED', `Step ${transition.toStepId} was removed from the workflow`, now.toISOString());
  return enter(state, step, definition, now, true);
}

/**
 * The transitions out of a step in the order they are tried: by `priority` (lower first; none
 * after every numbered one), then in creation order. The first whose condition holds is taken:
 * no condition always holds, `{branch}` holds when the step ended on that branch.
 */
export function nextTransition(transitions: TransitionDef[], fromStepId: string, branch: Branch | undefined): TransitionDef | undefined {
  const order = (t: TransitionDef) => t.priority ?? Number.POSITIVE_INFINITY;
  return transitions
    .filter((t) => t.fromStepId === fromStepId)
    .sort((a, b) => order(a) - order(b) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .find((t) => !t.condition?.branch || t.condition.branch === branch);
}

/** Arrives at a step: wait in it, end on it, or have the shell perform it. */
function enter(state: ExecutionState, step: StepDef, definition: Definition, now: Date, counts: boolean): Decision {
  const at = now.toISOString();
  const visits = counts ? state.visits + 1 : state.visits;
  const path = counts ? [...(state.path ?? []), step.id].slice(-PATH_LIMIT) : state.path;
  const arrived: ExecutionState = { ...state, status: 'RUNNING', stepId: step.id, visits, path, attempts: 0, failure: null, wait: null, updatedAt: at };
  switch (step.type) {
    case 'DELAY': {
      const until = new Date(now.getTime() + delayMs(step.config)).toISOString();
      const wait: Wait = { until, reminder: `w${visits}` };
      return { state: { ...arrived, status: 'WAITING', wait }, effects: [{ kind: 'remind', name: wait.reminder, at: until }, { kind: 'save' }] };
    }
    case 'WAIT_FOR_EVENT': {
      const until = new Date(now.getTime() + Number(step.config.timeout) * 1_000).toISOString();
      const wait: Wait = { until, reminder: `w${visits}`, eventName: String(step.config.eventName), since: at };
      return { state: { ...arrived, status: 'WAITING', wait }, effects: [{ kind: 'remind', name: wait.reminder, at: until }, { kind: 'save' }] };
    }
    case 'EXIT':
      return finish(arrived, 'COMPLETED', typeof step.config.reason === 'string' ? step.config.reason : null, at);
    case 'TRIGGER':
      return advance(arrived, step.id, undefined, definition, now);
    default: {
      if (DEFERRED_STEPS.includes(step.type)) {
        const wait: Wait = { until: at, reminder: `r${visits}.0` };
        return { state: { ...arrived, wait }, effects: [{ kind: 'remind', name: wait.reminder, at }, { kind: 'save' }] };
      }
      return { state: arrived, effects: [{ kind: 'save' }, { kind: 'perform', step, visit: visits }] };
    }
  }
}

export function delayMs(config: Record<string, unknown>): number {
  return Number(config.amount) * UNIT_MS[config.unit as DelayUnit];
}

function finish(state: ExecutionState, status: 'COMPLETED' | 'CANCELLED' | 'FAILED', reason: string | null, at: string): Decision {
  return { state: { ...state, status, reason, wait: null, updatedAt: at, completedAt: at }, effects: [{ kind: 'save' }] };
}

/** A new execution is saved even when its first decision had nothing else to save. */
function withSave(decision: Decision): Decision {
  return decision.effects.some((e) => e.kind === 'save') ? decision : { ...decision, effects: [{ kind: 'save' }, ...decision.effects] };
}
