import { describe, expect, it, vi } from 'vitest';
import { newId } from '../../domain/ids.ts';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const timeOf = (id: string) => parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe('newId', () => {
  it('is a UUIDv7 carrying the time it was made', () => {
    const before = Date.now();
    const id = newId();
    expect(id).toMatch(V7);
    expect(timeOf(id)).toBeGreaterThanOrEqual(before);
    expect(timeOf(id)).toBeLessThanOrEqual(Date.now());
  });

  it('sorts in the order ids were made, within one millisecond and past 4,096 of them', () => {
    vi.useFakeTimers({ now: Date.parse('2026-11-24T10:00:00.000Z'), toFake: ['Date'] });
    try {
      const ids = Array.from({ length: 10_000 }, () => newId());
      expect(new Set(ids).size).toBe(ids.length);
      expect([...ids].sort()).toEqual(ids);
      expect(ids.every((id) => V7.test(id))).toBe(true);
      // The clock stepping back does not break the order either.
      vi.setSystemTime(Date.parse('2026-11-24T09:59:00.000Z'));
      const later = newId();
      expect(later > ids.at(-1)!).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
