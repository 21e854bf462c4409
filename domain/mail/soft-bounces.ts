/**
 * Soft bounces: a relay's 4xx for one recipient ("mailbox full", greylisting) says "not now",
 * not "never". Pure rules, no I/O: when the mailer tries again, when it gives up, and when
 * repeated soft bounces of one contact suppress its address like a hard bounce.
 */

/** What an email record keeps of its soft failures, so the retry window survives restarts. */
export interface SoftFailures {
  /** The first 4xx: the retry window is counted from here. */
  firstAt: string;
  /** 4xx answers so far. */
  count: number;
}

export type AfterSoftFailure =
  | { kind: 'retry'; at: string; failures: SoftFailures }
  | { kind: 'bounce'; failures: SoftFailures };

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

/**
 * After a 4xx at `now`: retry with a growing pause (1, 2, 4 … minutes, at most an hour, as MTAs
 * do, so a greylisting server is not hammered), never past the window's end, where one last try
 * is made; a 4xx at or after the end records the soft bounce. A short window (tests, impatient
 * operators) gets at least ten tries: no pause is longer than a tenth of it.
 */
export function afterSoftFailure(previous: SoftFailures | undefined, now: Date, windowHours: number): AfterSoftFailure {
  const failures = { firstAt: previous?.firstAt ?? now.toISOString(), count: (previous?.count ?? 0) + 1 };
  const windowMs = windowHours * HOUR;
  const end = Date.parse(failures.firstAt) + windowMs;
  if (now.getTime() >= end) return { kind: 'bounce', failures };
  const pause = Math.min(MINUTE * 2 ** Math.min(failures.count - 1, 20), HOUR, windowMs / 10);
  return { kind: 'retry', at: new Date(Math.min(now.getTime() + pause, end)).toISOString(), failures };
}

/**
 * How often the mailer looks for emails whose next try is due (apps/mailer/retries.ts): a twentieth
 * of the window, between a quarter of a second and 30 s, so a try comes late by little beside its
 * pause (a tenth of the window at most).
 */
export const retrySweepMs = (windowHours: number) => Math.min(30_000, Math.max(250, (windowHours * HOUR) / 20));

/** A due email handed to the queue is due again this long after, should its message be lost. */
export const RETRY_LEASE_MS = 5 * MINUTE;

export interface SoftBounceLimit {
  /** Soft bounces within the window that suppress; 0 turns the rule off. */
  count: number;
  windowDays: number;
}

/** Where the window of `limit` starts, seen at `at`. */
export const softBounceWindowStart = (limit: SoftBounceLimit, at: string) => new Date(Date.parse(at) - limit.windowDays * 24 * HOUR).toISOString();

/** Whether `count` soft bounces of one contact within the window (the latest included) suppress its address. */
export const softBouncesSuppress = (count: number, limit: SoftBounceLimit) => limit.count > 0 && count >= limit.count;
