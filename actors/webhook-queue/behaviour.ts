// The life of one webhook delivery: no I/O, no clock, no randomness of its own. Its endpoint's
// queue (actor.ts) wakes it when it is due; the next attempt's time is kept on the delivery.
// PENDING → (a 2xx) DELIVERED | (410 Gone) FAILED and the endpoint disabled | (24 h without a
// 2xx) FAILED and the endpoint checked for 24 h of failures; anything else is retried with
// exponential backoff and jitter, the first retry within 10 s.
import type { DeliveryAttempt, DeliveryStatus } from '../../domain/webhooks/collection.ts';

export interface DeliveryState {
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  nextAttemptAt: string | null;
  createdAt: string;
}

export interface RetryPolicy {
  /** The wait before the first retry; each later one doubles it, up to `maxDelayMs`. */
  firstRetryMs: number;
  maxDelayMs: number;
  /** How long after its creation a delivery is still tried. */
  giveUpAfterMs: number;
}

/** Production: 5 s (±20%, so within 10 s), 10 s, 20 s, … up to an hour between tries, for 24 h (about 30 tries). */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { firstRetryMs: 5_000, maxDelayMs: 60 * 60_000, giveUpAfterMs: 24 * 60 * 60_000 };

export type DeliveryCommand =
  /** A reminder fired (or the start-up resume): is an attempt due? `endpoint` as it is now. */
  | { kind: 'wake'; endpoint: { enabled: boolean } | null }
  /** What the attempt got; `jitter` is a number in [0, 1) the shell draws. */
  | { kind: 'answered'; attempt: DeliveryAttempt; jitter: number };

export type DeliveryEffect =
  | { kind: 'send' }
  | { kind: 'save' }
  /** 410 Gone: the receiver says the endpoint is no more. */
  | { kind: 'disableEndpoint'; reason: string }
  /** Given up after 24 h: the endpoint is disabled if nothing reached it in that time. */
  | { kind: 'gaveUp'; since: string };

export type Decision = { state: DeliveryState; effects: DeliveryEffect[] };

/** The wait before retry number `retry` (1 = the first retry): doubling, capped, ±20% jitter so receivers coming back are not hit all at once. */
export function retryDelayMs(retry: number, jitter: number, policy: RetryPolicy): number {
  const base = Math.min(policy.firstRetryMs * 2 ** (retry - 1), policy.maxDelayMs);
  return Math.round(base * (0.8 + 0.4 * jitter));
}

export const isSuccess = (status: number | undefined) => status !== undefined && status >= 200 && status < 300;

export function decide(state: DeliveryState, command: DeliveryCommand, now: Date, policy: RetryPolicy): Decision {
  if (state.status !== 'PENDING') return { state, effects: [] };
  switch (command.kind) {
    case 'wake': {
      if (!command.endpoint || !command.endpoint.enabled) {
        // Nothing goes to a disabled or deleted endpoint; a replay can send it once it is back.
        const error = command.endpoint ? 'The endpoint is disabled' : 'The endpoint was deleted';
        return { state: { ...state, status: 'FAILED', nextAttemptAt: null, attempts: [...state.attempts, { at: now.toISOString(), error, durationMs: 0 }] }, effects: [{ kind: 'save' }] };
      }
      // A wake before its time (another process's queue got to it first) waits for its time.
      if (state.nextAttemptAt && state.nextAttemptAt > now.toISOString()) return { state, effects: [] };
      return { state, effects: [{ kind: 'send' }] };
    }
    case 'answered': {
      const attempts = [...state.attempts, command.attempt];
      const { status } = command.attempt;
      if (isSuccess(status)) return { state: { ...state, status: 'DELIVERED', attempts, nextAttemptAt: null }, effects: [{ kind: 'save' }] };
      if (status === 410) {
        return {
          state: { ...state, status: 'FAILED', attempts, nextAttemptAt: null },
          effects: [{ kind: 'save' }, { kind: 'disableEndpoint', reason: 'The endpoint answered 410 Gone' }],
        };
      }
      const retries = attempts.length; // the retry about to be scheduled is number `attempts.length`
      const next = new Date(now.getTime() + retryDelayMs(retries, command.jitter, policy));
      if (next.getTime() > Date.parse(state.createdAt) + policy.giveUpAfterMs) {
        return { state: { ...state, status: 'FAILED', attempts, nextAttemptAt: null }, effects: [{ kind: 'save' }, { kind: 'gaveUp', since: state.createdAt }] };
      }
      return { state: { ...state, attempts, nextAttemptAt: next.toISOString() }, effects: [{ kind: 'save' }] };
    }
  }
}
