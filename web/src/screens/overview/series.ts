/**
 * The Overview's time axis: a range ending today, cut into days (7 and 30 days) or weeks (90 days);
 * one GET /events/stats call with `interval` answers the totals and every bucket of the chart.
 */
export const RANGES = [
  { days: 7, label: 'Last 7 days', bucketDays: 1, interval: 'day' },
  { days: 30, label: 'Last 30 days', bucketDays: 1, interval: 'day' },
  { days: 90, label: 'Last 90 days', bucketDays: 7, interval: 'week' },
] as const;

export const EMAIL_EVENTS = [
  { name: 'email.sent', label: 'Sent', color: '#1d4ed8' },
  { name: 'email.delivery', label: 'Delivered', color: '#15803d' },
  { name: 'email.open', label: 'Opened', color: '#7c3aed' },
  { name: 'email.click', label: 'Clicked', color: '#c2410c' },
  { name: 'email.bounce', label: 'Bounced', color: '#b91c1c' },
  { name: 'email.complaint', label: 'Complaints', color: '#4b5563' },
] as const;

export interface Window {
  start: Date;
  end: Date;
}

const DAY_MS = 86_400_000;

/**
 * Whole buckets covering the last `days` days up to the end of today, starting at a local midnight:
 * the server counts its buckets from `start`, so they are the user's days (or weeks).
 */
export function windowOf(days: number, bucketDays: number, now: Date): Window {
  const endOfToday = new Date(now);
  endOfToday.setHours(24, 0, 0, 0);
  const buckets = Math.ceil(days / bucketDays);
  return { start: new Date(endOfToday.getTime() - buckets * bucketDays * DAY_MS), end: new Date(endOfToday.getTime() - 1) };
}

/** Share of `part` in `whole` as a percentage with one decimal, or an em dash when there is no whole. */
export const rate = (part: number, whole: number) => (whole > 0 ? `${((part / whole) * 100).toFixed(1)}%` : '—');
