import { describe, expect, it } from 'vitest';
import { rate, windowOf } from '../../web/src/screens/overview/series.ts';

describe("the Overview's time axis", () => {
  it('covers the whole range in whole buckets up to the end of today', () => {
    const now = new Date(2030, 4, 15, 13, 30);
    for (const [days, bucketDays, count] of [[7, 1, 7], [30, 1, 30], [90, 7, 13]] as const) {
      const { start, end } = windowOf(days, bucketDays, now);
      expect(end.getTime()).toBe(new Date(2030, 4, 16).getTime() - 1);
      expect(end.getTime() + 1 - start.getTime()).toBe(count * bucketDays * 86_400_000);
      expect(start.getTime()).toBeLessThanOrEqual(new Date(2030, 4, 16 - days).getTime());
    }
  });

  it('a rate of nothing is a dash, not 0% or NaN', () => {
    expect(rate(0, 0)).toBe('—');
    expect(rate(1, 3)).toBe('33.3%');
  });
});
