// The life of one execution as the pure decide function sees it: plain values in, state and
// effects out, no runtime.
import { describe, expect, it } from 'vitest';
import {
  decide,
  nextTransition,
  RETRY_DELAYS_MS,
  SAME_FAILURE_LIMIT,
  THREW_RETRY_DELAYS_MS,
  type Definition,
  type ExecutionCommand,
  type ExecutionState,
  type StepDef,
  type TransitionDef,
} from '../../actors/workflow-execution/behaviour.ts';
import { AppError } from '../../domain/errors.ts';
import { compareValue } from '../../domain/workflows/condition.ts';
import { forbiddenAddress } from '../../domain/http/outbound.ts';

const t0 = new Date('2030-01-01T12:00:00.000Z');
const plus = (ms: number) => new Date(t0.getTime() + ms);
const trigger = { eventId: 'ev1', name: 'signed-up', data: { plan: 'pro' } };

const step = (id: string, type: StepDef['type'], config: Record<string, unknown> = {}): StepDef => ({ id, type, config });
let tid = 0;
const link = (fromStepId: string, toStepId: string, extra: Partial<TransitionDef> = {}): TransitionDef => ({
  id: `t${String(++tid).padStart(3, '0')}`,
  fromStepId,
  toStepId,
  condition: null,
  priority: null,
  ...extra,
});
const def = (steps: StepDef[], transitions: TransitionDef[]): Definition => ({ steps: [step('trig', 'TRIGGER'), ...steps], transitions });

const start = (definition: Definition | null, now = t0) =>
  decide(undefined, { kind: 'start', projectId: 'p1', workflowId: 'w1', contactId: 'c1', trigger, definition }, now);

/** Feeds commands one after another, as the shell does. */
function run(state: ExecutionState | undefined, commands: ExecutionCommand[], now = t0) {
  let s = state;
  let effects: unknown[] = [];
  for (const c of commands) {
    const d = decide(s, c, now);
    s = d.state;
    effects = d.effects;
  }
  return { state: s!, effects };
}

describe('workflow execution behaviour', () => {
  it('starts at the TRIGGER and runs straight to the first action step, saving first', () => {
    const d = def([step('send', 'SEND_EMAIL', { templateId: 'tpl' })], [link('trig', 'send')]);
    const { state, effects } = start(d);
    expect(state).toMatchObject({ status: 'RUNNING', stepId: 'send', visits: 1, trigger, createdAt: t0.toISOString() });
    expect(effects).toEqual([{ kind: 'save' }, { kind: 'perform', step: d.steps[1], visit: 1 }]);
  });

  it('a workflow with only its TRIGGER completes at once; a start that finds its execution changes nothing', () => {
    const { state } = start(def([], []));
    expect(state).toMatchObject({ status: 'COMPLETED', reason: null, completedAt: t0.toISOString() });
    expect(decide(state, { kind: 'start', projectId: 'p1', workflowId: 'w1', contactId: 'c1', trigger, definition: def([], []) }, t0)).toEqual({ state, effects: [] });
    expect(start(null)).toEqual({ state: undefined, effects: [] });
  });

  it('DELAY waits with a reminder in its unit, then goes on when woken at its time, not before', () => {
    const d = def([step('d', 'DELAY', { amount: 2, unit: 'minutes' }), step('x', 'EXIT', { reason: 'done' })], [link('trig', 'd'), link('d', 'x')]);
    const { state, effects } = start(d);
    const until = plus(120_000).toISOString();
    expect(state).toMatchObject({ status: 'WAITING', stepId: 'd', wait: { until, reminder: 'w1' } });
    expect(effects).toEqual([{ kind: 'remind', name: 'w1', at: until }, { kind: 'save' }]);

    const early = decide(state, { kind: 'wake', definition: d }, plus(60_000));
    expect(early).toEqual({ state, effects: [{ kind: 'remind', name: 'w1', at: until }] });
    const woken = decide(state, { kind: 'wake', definition: d }, plus(120_001));
    expect(woken.state).toMatchObject({ status: 'COMPLETED', reason: 'done', stepId: 'x', wait: null });
    for (const [unit, ms] of [['seconds', 1e3], ['hours', 36e5], ['days', 864e5], ['weeks', 6048e5]] as const) {
      const s = start(def([step('d', 'DELAY', { amount: 3, unit })], [link('trig', 'd')])).state!;
      expect(Date.parse(s.wait!.until) - t0.getTime()).toBe(3 * ms);
    }
  });

  it('WAIT_FOR_EVENT: the awaited event follows `event` and drops the reminder; the timeout follows `timeout`', () => {
    const d = def(
      [step('w', 'WAIT_FOR_EVENT', { eventName: 'paid', timeout: 60 }), step('yes', 'EXIT', { reason: 'paid' }), step('no', 'EXIT', { reason: 'lapsed' })],
      [link('trig', 'w'), link('w', 'no', { condition: { branch: 'timeout' } }), link('w', 'yes', { condition: { branch: 'event' } })],
    );
    const waiting = start(d).state!;
    expect(waiting).toMatchObject({ status: 'WAITING', wait: { eventName: 'paid', since: t0.toISOString(), until: plus(60_000).toISOString() } });

    const paid = decide(waiting, { kind: 'event', eventId: 'ev2', name: 'paid', createdAt: plus(1_000).toISOString(), definition: d }, plus(1_000));
    expect(paid.state).toMatchObject({ status: 'COMPLETED', reason: 'paid' });
    expect(paid.effects[0]).toEqual({ kind: 'cancelReminder', name: 'w1' });

    const ignored = [
      { eventId: 'ev3', name: 'other', createdAt: plus(1_000).toISOString() },
      { eventId: 'ev1', name: 'paid', createdAt: plus(1_000).toISOString() }, // the trigger itself
      { eventId: 'ev4', name: 'paid', createdAt: plus(-1).toISOString() }, // before the wait began
    ];
    for (const e of ignored) expect(decide(waiting, { kind: 'event', ...e, definition: d }, plus(1_000))).toEqual({ state: waiting, effects: [] });

    const timedOut = decide(waiting, { kind: 'wake', definition: d }, plus(60_000));
    expect(timedOut.state).toMatchObject({ status: 'COMPLETED', reason: 'lapsed' });
  });

  it('CONDITION branches follow the reported branch; transitions are tried by priority, then creation order', () => {
    const d = def(
      [step('c', 'CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' }), step('y', 'EXIT', { reason: 'y' }), step('n', 'EXIT', { reason: 'n' }), step('any', 'EXIT', { reason: 'any' })],
      [link('trig', 'c'), link('c', 'any', { priority: 9 }), link('c', 'n', { condition: { branch: 'no' }, priority: 2 }), link('c', 'y', { condition: { branch: 'yes' }, priority: 1 })],
    );
    const running = start(d).state!;
    expect(run(running, [{ kind: 'stepDone', stepId: 'c', branch: 'yes', definition: d }]).state.reason).toBe('y');
    expect(run(running, [{ kind: 'stepDone', stepId: 'c', branch: 'no', definition: d }]).state.reason).toBe('n');
    // The path is the steps entered, the branch taken included: what the dashboard highlights.
    expect(run(running, [{ kind: 'stepDone', stepId: 'c', branch: 'no', definition: d }]).state.path).toEqual(['trig', 'c', 'n']);

    const ts = [link('a', 'x'), link('a', 'y', { priority: 3 }), link('a', 'z', { priority: 1 }), link('a', 'w')];
    expect(nextTransition(ts, 'a', undefined)?.toStepId).toBe('z');
    expect(nextTransition(ts.filter((t) => t.priority === null), 'a', undefined)?.toStepId).toBe('x');
    expect(nextTransition([link('a', 'b', { condition: { branch: 'yes' } })], 'a', 'no')).toBeUndefined();
  });

  it('no transition out of a step completes the execution; a transition to a removed step fails it', () => {
    const d = def([step('u', 'UPDATE_CONTACT', { data: { a: 1 } })], [link('trig', 'u')]);
    expect(run(start(d).state, [{ kind: 'stepDone', stepId: 'u', definition: d }]).state).toMatchObject({ status: 'COMPLETED', reason: null });
    const broken = def([], [link('trig', 'gone')]);
    expect(start(broken).state).toMatchObject({ status: 'FAILED', reason: 'Step gone was removed from the workflow' });
  });

  it('WEBHOOK runs in a turn of its own; a retryable failure is retried by reminder until the attempts run out', () => {
    const d = def([step('h', 'WEBHOOK', { url: 'https://x.example' })], [link('trig', 'h')]);
    const deferred = start(d);
    expect(deferred.state).toMatchObject({ status: 'RUNNING', stepId: 'h', wait: { until: t0.toISOString(), reminder: 'r1.0' } });
    expect(deferred.effects).toEqual([{ kind: 'remind', name: 'r1.0', at: t0.toISOString() }, { kind: 'save' }]);
    const performing = decide(deferred.state, { kind: 'wake', definition: d }, t0);
    expect(performing.effects).toEqual([{ kind: 'perform', step: d.steps[1], visit: 1 }]);

    const fail = (state: ExecutionState, retryable = true) =>
      decide(state, { kind: 'stepFailed', stepId: 'h', reason: 'HTTP 503', retryable, maxAttempts: 3, definition: d }, t0);
    const once = fail(performing.state!);
    expect(once.state).toMatchObject({ status: 'RUNNING', attempts: 1, wait: { until: plus(RETRY_DELAYS_MS[0]).toISOString(), reminder: 'r1.1' } });
    const twice = fail(once.state!);
    expect(twice.state).toMatchObject({ attempts: 2, wait: { until: plus(RETRY_DELAYS_MS[1]).toISOString() } });
    expect(fail(twice.state!).state).toMatchObject({ status: 'FAILED', reason: 'HTTP 503 (after 3 attempts)' });
    expect(fail(performing.state!, false).state).toMatchObject({ status: 'FAILED', reason: 'HTTP 503' });
  });

  it('a step that throws is tried again later, and one that throws the same way every time fails the execution', () => {
    const d = def([step('c', 'CONDITION', { field: 'data.plan', operator: 'equals', value: 'pro' }), step('d', 'DELAY', { amount: 1, unit: 'hours' })], [link('trig', 'c'), link('c', 'd')]);
    const running = start(d).state!;
    const threw = (state: ExecutionState, reason = 'TypeError: x is not a function', now = t0) => decide(state, { kind: 'stepThrew', stepId: 'c', reason, definition: d }, now);

    const once = threw(running);
    expect(once.state).toMatchObject({ status: 'RUNNING', failure: { count: 1 }, wait: { until: plus(THREW_RETRY_DELAYS_MS[0]).toISOString(), reminder: 't1.1' } });
    expect(once.effects).toEqual([{ kind: 'remind', name: 't1.1', at: plus(THREW_RETRY_DELAYS_MS[0]).toISOString() }, { kind: 'save' }]);
    // Woken by that reminder, it runs the step again.
    expect(decide(once.state, { kind: 'wake', definition: d }, plus(THREW_RETRY_DELAYS_MS[0])).effects).toEqual([{ kind: 'perform', step: d.steps[1], visit: 1 }]);

    let state = once.state!;
    for (let n = 2; n < SAME_FAILURE_LIMIT; n++) {
      state = threw(state).state!;
      expect(state).toMatchObject({ status: 'RUNNING', failure: { count: n } });
    }
    // Another reason in between starts the count again: an outage that changes its face is not a defect.
    expect(threw(threw(state, 'MongoNetworkError: connection refused').state!).state).toMatchObject({ status: 'RUNNING', failure: { count: 1 } });
    expect(threw(state).state).toMatchObject({
      status: 'FAILED',
      reason: `Step c failed the same way ${SAME_FAILURE_LIMIT} times in a row: TypeError: x is not a function`,
      wait: null,
    });
    // A step that then succeeds moves on with a clean slate.
    expect(decide(state, { kind: 'stepDone', stepId: 'c', branch: 'yes', definition: d }, t0).state).toMatchObject({ status: 'WAITING', stepId: 'd', failure: null });
  });

  it('cancel ends a RUNNING or WAITING execution and drops its reminder; an ended one is INVALID_STATE', () => {
    const d = def([step('d', 'DELAY', { amount: 1, unit: 'hours' })], [link('trig', 'd')]);
    const waiting = start(d).state!;
    const cancelled = decide(waiting, { kind: 'cancel' }, t0);
    expect(cancelled.state).toMatchObject({ status: 'CANCELLED', reason: 'Cancelled', wait: null });
    expect(cancelled.effects).toEqual([{ kind: 'save' }, { kind: 'cancelReminder', name: 'w1' }]);
    const err = (() => {
      try {
        decide(cancelled.state, { kind: 'cancel' }, t0);
      } catch (e) {
        return e as AppError;
      }
    })();
    expect(err).toBeInstanceOf(AppError);
    expect(err!.code).toBe('INVALID_STATE');
    // A stale reminder or event after the end changes nothing.
    expect(decide(cancelled.state, { kind: 'wake', definition: d }, plus(4e6))).toEqual({ state: cancelled.state, effects: [] });
  });

  it('a workflow deleted under a waiting execution cancels it at its next turn; a runaway loop fails it', () => {
    const d = def([step('d', 'DELAY', { amount: 1, unit: 'seconds' })], [link('trig', 'd')]);
    const waiting = start(d).state!;
    expect(decide(waiting, { kind: 'wake', definition: null }, plus(2_000)).state).toMatchObject({ status: 'CANCELLED', reason: 'The workflow was deleted' });
    expect(decide(waiting, { kind: 'runaway', reason: 'loops' }, t0).state).toMatchObject({ status: 'FAILED', reason: 'loops' });
  });

  it('each visit of a step is numbered, so a loop through a DELAY gets fresh reminder names', () => {
    const d = def([step('d', 'DELAY', { amount: 1, unit: 'seconds' }), step('u', 'UPDATE_CONTACT', { data: { n: 1 } })], [link('trig', 'd'), link('d', 'u'), link('u', 'd')]);
    const first = start(d).state!;
    const second = run(first, [{ kind: 'wake', definition: d }, { kind: 'stepDone', stepId: 'u', definition: d }], plus(1_000));
    expect(second.state).toMatchObject({ status: 'WAITING', stepId: 'd', visits: 3, wait: { reminder: 'w3' } });
    // A step entered again is on the path again; waking in a step does not enter it twice.
    expect(second.state.path).toEqual(['trig', 'd', 'u', 'd']);
  });
});

describe('workflow step helpers', () => {
  it('trigger data comparisons', () => {
    expect(compareValue(250, 'greaterThan', 100)).toBe(true);
    expect(compareValue('250', 'greaterThan', 100)).toBe(true);
    expect(compareValue('abc', 'greaterThan', 1)).toBe(false);
    expect(compareValue('Gold', 'equals', 'gold')).toBe(true);
    expect(compareValue(undefined, 'notEquals', 'x')).toBe(true);
    expect(compareValue('Premium plan', 'contains', 'PREM')).toBe(true);
    expect(compareValue(null, 'exists', undefined)).toBe(false);
    expect(compareValue(false, 'exists', undefined)).toBe(true);
  });

  it('the SSRF guard names loopback, private, link-local and reserved addresses, and lets public ones through', () => {
    expect(forbiddenAddress('127.0.0.1')).toBe('a loopback address');
    expect(forbiddenAddress('::1')).toBe('a loopback address');
    expect(forbiddenAddress('::ffff:127.0.0.1')).toBe('a loopback address');
    expect(forbiddenAddress('::ffff:7f00:1')).toBe('a loopback address');
    expect(forbiddenAddress('10.0.0.8')).toBe('a private address');
    expect(forbiddenAddress('172.20.1.1')).toBe('a private address');
    expect(forbiddenAddress('192.168.1.1')).toBe('a private address');
    expect(forbiddenAddress('fd12::1')).toBe('a private address');
    expect(forbiddenAddress('169.254.169.254')).toBe('a link-local address');
    expect(forbiddenAddress('fe80::1')).toBe('a link-local address');
    expect(forbiddenAddress('0.0.0.0')).toBe('a reserved address');
    expect(forbiddenAddress('93.184.216.34')).toBeNull();
    expect(forbiddenAddress('2606:4700::1111')).toBeNull();
    expect(forbiddenAddress('172.32.0.1')).toBeNull();
  });
});
