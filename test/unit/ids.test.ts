import { describe, expect, it, vi } from 'vitest';
import { derivedId, newId, orderedDerivedId } from '../../domain/ids.ts';

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
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

describe('derived ids', () => {
  it('are UUIDv8s, the same for the same parts and different for different ones', () => {
    expect(derivedId('campaign', 'c1', 'k1')).toMatch(V8);
    expect(derivedId('campaign', 'c1', 'k1')).toBe(derivedId('campaign', 'c1', 'k1'));
    expect(derivedId('campaign', 'c1', 'k2')).not.toBe(derivedId('campaign', 'c1', 'k1'));
    // The parts are kept apart: moving a character from one to the next is another id.
    expect(derivedId('ab', 'c')).not.toBe(derivedId('a', 'bc'));
  });

  it('in the order of time-ordered ids sort as those do, and stay a function of their parts', () => {
    const orders = Array.from({ length: 2_000 }, () => newId());
    const ids = orders.map((order) => orderedDerivedId(order, 'campaign', 'c1', order));
    expect(ids.every((id) => V8.test(id))).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(orders.map((order) => orderedDerivedId(order, 'campaign', 'c1', order))).toEqual(ids);
    // Two campaigns to one contact: the same place in the order, not the same id.
    expect(orderedDerivedId(orders[0], 'campaign', 'c2', orders[0])).not.toBe(ids[0]);
    expect(orderedDerivedId(orders[0], 'campaign', 'c2', orders[0]).slice(0, 18)).toBe(ids[0].slice(0, 18));
  });

  it('in the order of something that is not a UUID are plain derived ids', () => {
    expect(orderedDerivedId('contact-1', 'campaign', 'c1', 'contact-1')).toBe(derivedId('campaign', 'c1', 'contact-1'));
  });
});
