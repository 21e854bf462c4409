// The rules of one webhook delivery, as plain values: when it is sent, retried, given up.
import { describe, expect, it } from 'vitest';
import { decide, DEFAULT_RETRY_POLICY, retryDelayMs, type DeliveryState } from '../../actors/webhook-queue/behaviour.ts';
import { matchesPattern } from '../../domain/webhooks/patterns.ts';

const t0 = new Date('2030-01-01T12:00:00.000Z');
const plus = (ms: number) => new Date(t0.getTime() + ms);
const fresh: DeliveryState = { status: 'PENDING', attempts: [], nextAttemptAt: t0.toISOString(), createdAt: t0.toISOString() };
const answered = (status: number | undefined, jitter = 0.5) => ({
  kind: 'answered' as const,
  attempt: { at: t0.toISOString(), durationMs: 12, ...(status === undefined ? { error: 'No answer within 10000 ms' } : { status }) },
  jitter,
});
const enabled = { kind: 'wake' as const, endpoint: { enabled: true } };
const policy = DEFAULT_RETRY_POLICY;

describe('a webhook delivery', () => {
  it('is sent when its time has come and its endpoint is enabled', () => {
    expect(decide(fresh, enabled, t0, policy).effects).toEqual([{ kind: 'send' }]);
  });

  it('sends nothing to a disabled or deleted endpoint: it fails, saying why', () => {
    const disabled = decide(fresh, { kind: 'wake', endpoint: { enabled: false } }, t0, policy);
    expect(disabled.effects).toEqual([{ kind: 'save' }]);
    expect(disabled.state).toMatchObject({ status: 'FAILED', attempts: [{ error: 'The endpoint is disabled' }] });
    expect(decide(fresh, { kind: 'wake', endpoint: null }, t0, policy).state.attempts[0].error).toBe('The endpoint was deleted');
  });

  it('is delivered by any 2xx', () => {
    for (const status of [200, 202, 204, 299]) expect(decide(fresh, answered(status), t0, policy).state.status).toBe('DELIVERED');
  });

  it('410 Gone fails it and disables the endpoint at once', () => {
    const d = decide(fresh, answered(410), t0, policy);
    expect(d.state.status).toBe('FAILED');
    expect(d.effects).toContainEqual({ kind: 'disableEndpoint', reason: expect.stringContaining('410') });
  });

  it('any other answer, or none, is retried: the first retry within 10 s, later ones doubling', () => {
    for (const status of [500, 404, 301, 429, undefined]) {
      for (const jitter of [0, 0.999]) {
        const d = decide(fresh, answered(status, jitter), t0, policy);
        expect(d.state.status).toBe('PENDING');
        const wait = Date.parse(d.state.nextAttemptAt!) - t0.getTime();
        expect(wait).toBeGreaterThan(0);
        expect(wait).toBeLessThanOrEqual(10_000);
        expect(d.effects).toEqual([{ kind: 'save' }]);
      }
    }
    expect(retryDelayMs(2, 0.5, policy)).toBe(2 * retryDelayMs(1, 0.5, policy));
    expect(retryDelayMs(30, 0.5, policy)).toBe(policy.maxDelayMs);
  });

  it('a wake before its retry is due does nothing', () => {
    const waiting = decide(fresh, answered(500), t0, policy).state;
    expect(decide(waiting, enabled, t0, policy).effects).toEqual([]);
  });

  it('is given up after 24 h of failures, and the endpoint is checked for 24 h without a delivery', () => {
    let state = fresh;
    let now = t0;
    let tries = 0;
    while (state.status === 'PENDING') {
      const d = decide(state, answered(503), now, policy);
      state = d.state;
      tries++;
      if (state.status === 'FAILED') expect(d.effects).toContainEqual({ kind: 'gaveUp', since: t0.toISOString() });
      else now = new Date(state.nextAttemptAt!);
    }
    expect(now.getTime() - t0.getTime()).toBeLessThanOrEqual(policy.giveUpAfterMs);
    expect(now.getTime()).toBeGreaterThan(plus(20 * 3_600_000).getTime());
    expect(tries).toBeGreaterThan(20);
    expect(tries).toBeLessThan(50);
  });

  it('a finished delivery ignores every later command', () => {
    const done = decide(fresh, answered(200), t0, policy).state;
    expect(decide(done, enabled, t0, policy)).toEqual({ state: done, effects: [] });
    expect(decide(done, answered(500), t0, policy)).toEqual({ state: done, effects: [] });
  });
});

describe('event patterns', () => {
  it.each([
    ['email.*', 'email.sent', true],
    ['email.*', 'email', false],
    ['email.*', 'email.bounce.extra', false],
    ['segment.*.entry', 'segment.vip.entry', true],
    ['segment.*.entry', 'segment.vip.exit', false],
    ['contact.*', 'contact.unsubscribed', true],
    ['*', 'anything.at.all', true],
    ['signed-up', 'signed-up', true],
    ['signed-up', 'signed-up-twice', false],
    ['*.sent', 'email.sent', true],
  ])('%s matches %s: %s', (pattern, name, expected) => {
    expect(matchesPattern(pattern, name)).toBe(expected);
  });
});
