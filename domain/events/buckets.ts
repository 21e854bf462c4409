// GET /events/stats?interval=: the range cut into equal periods, so a chart is one call.
import { invalid } from '../errors.ts';
import { LIMITS } from '../limits.ts';

export const STATS_INTERVALS = ['hour', 'day', 'week'] as const;
export type StatsInterval = (typeof STATS_INTERVALS)[number];

const INTERVAL_MS: Record<StatsInterval, number> = { hour: 3_600_000, day: 86_400_000, week: 7 * 86_400_000 };

/** Both ends included, as the range of the stats themselves. */
export interface StatsBucket {
  start: string;
  end: string;
}

/**
 * Periods of `interval` from `start` on, oldest first, the last one cut at `end`. They count from
 * `start`, not from UTC midnight: a client wanting its own calendar days passes its local midnight
 * (days are 24 hours, so after a daylight-saving change they are an hour off its midnights). Each
 * ends a millisecond before the next starts (timestamps are stored to the millisecond), so no
 * event is in two of them.
 */
export function statsBuckets(range: { start?: string; end?: string }, interval: StatsInterval): StatsBucket[] {
  if (!range.start) throw invalid('start', 'interval needs a start', 'required');
  if (!range.end) throw invalid('end', 'interval needs an end', 'required');
  const from = Date.parse(range.start);
  const to = Date.parse(range.end);
  const step = INTERVAL_MS[interval];
  const count = Math.floor((to - from) / step) + 1;
  if (count > LIMITS.statsBuckets) {
    throw invalid('interval', `at most ${LIMITS.statsBuckets} ${interval}s a call: choose a longer interval or a shorter range`, 'too_many_buckets');
  }
  const buckets: StatsBucket[] = [];
  for (let at = from; at <= to; at += step) {
    buckets.push({ start: new Date(at).toISOString(), end: new Date(Math.min(at + step - 1, to)).toISOString() });
  }
  return buckets;
}
