/**
 * The Overview's time axis: a range ending now, cut into days (7 and 30 days) or weeks (90 days),
 * each bucket one GET /events/stats call, so the chart needs no endpoint of its own.
 */
export const RANGES = [
  { days: 7, label: 'Last 7 days', bucketDays: 1 },
  { days: 30, label: 'Last 30 days', bucketDays: 1 },
  { days: 90, label: 'Last 90 days', bucketDays: 7 },
] as const;

export const EMAIL_EVENTS = [
  { name: 'email.sent', label: 'Sent', color: '#1d4ed8' },
  { name: 'email.delivery', label: 'Delivered', color: '#15803d' },
  { name: 'email.open', label: 'Opened', color: '#7c3aed' },
  { name: 'email.click', label: 'Clicked', color: '#c2410c' },
  { name: 'email.bounce', label: 'Bounced', color: '#b91c1c' },
  { name: 'email.complaint', label: 'Complaints', color: '#4b5563' },
] as const;

export interface Bucket {
  start: Date;
  end: Date;
}

const DAY_MS = 86_400_000;

/** Buckets covering the last `days` days up to `now`, oldest first; days start at local midnight. */
export function bucketsOf(days: number, bucketDays: number, now: Date): Bucket[] {
  const endOfToday = new Date(now);
  endOfToday.setHours(24, 0, 0, 0);
  const buckets: Bucket[] = [];
  for (let end = endOfToday.getTime(); buckets.length * bucketDays < days; end -= bucketDays * DAY_MS) {
    buckets.unshift({ start: new Date(end - bucketDays * DAY_MS), end: new Date(end - 1) });
  }
  return buckets;
}

/** Share of `part` in `whole` as a percentage with one decimal, or an em dash when there is no whole. */
export const rate = (part: number, whole: number) => (whole > 0 ? `${((part / whole) * 100).toFixed(1)}%` : '—');
