import { describe, expect, it } from 'vitest';
import { bucketsOf, rate } from '../../web/src/screens/overview/series.ts';

describe("the Overview's time axis", () => {
  it('covers the whole range up to the end of today, oldest first, with no gap or overlap', () => {
    const now = new Date(2030, 4, 15, 13, 30);
    for (const [days, bucketDays, count] of [[7, 1, 7], [30, 1, 30], [90, 7, 13]] as const) {
      const buckets = bucketsOf(days, bucketDays, now);
      expect(buckets).toHaveLength(count);
      expect(buckets.at(-1)!.end.getTime()).toBe(new Date(2030, 4, 16).getTime() - 1);
      for (let i = 1; i < buckets.length; i++) expect(buckets[i].start.getTime()).toBe(buckets[i - 1].end.getTime() + 1);
      expect(buckets[0].start.getTime()).toBeLessThanOrEqual(new Date(2030, 4, 16 - days).getTime());
    }
  });

  it('a rate of nothing is a dash, not 0% or NaN', () => {
    expect(rate(0, 0)).toBe('—');
    expect(rate(1, 3)).toBe('33.3%');
  });
});
