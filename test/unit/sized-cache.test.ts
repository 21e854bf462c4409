// The bounded map of the sending thread's bodies, the stores' cached answers and the emails' shared contents.
import { describe, expect, it } from 'vitest';
import { ReadCache } from '../../adapters/read-cache.ts';
import { SizedCache } from '../../runtime/sized-cache.ts';

const keys = (cache: SizedCache<string, string>, all: string[]) => all.filter((key) => cache.get(key) !== undefined);

describe('SizedCache', () => {
  it('forgets the oldest set first, to stay within its count', () => {
    const cache = new SizedCache<string, string>(3, 1_000, (value) => value.length);
    for (const key of ['a', 'b', 'c']) cache.set(key, key);
    cache.set('a', 'a'); // set again: now the newest
    cache.set('d', 'd');
    expect(keys(cache, ['a', 'b', 'c', 'd'])).toEqual(['a', 'c', 'd']);
  });

  it('forgets the oldest until the sizes fit, counting a replaced value once', () => {
    const cache = new SizedCache<string, string>(100, 10, (value) => value.length);
    cache.set('a', 'xxxx');
    cache.set('b', 'xxxx');
    cache.set('b', 'xx'); // 4 + 2, not 4 + 4 + 2
    cache.set('c', 'xxxx'); // 10: all stay
    expect(keys(cache, ['a', 'b', 'c'])).toEqual(['a', 'b', 'c']);
    cache.set('d', 'x'); // 11: the oldest goes
    expect(keys(cache, ['a', 'b', 'c', 'd'])).toEqual(['b', 'c', 'd']);
    cache.delete('c');
    cache.set('e', 'xxxxx'); // 2 + 1 + 5 = 8
    expect(keys(cache, ['b', 'c', 'd', 'e'])).toEqual(['b', 'd', 'e']);
    cache.set('f', 'x'.repeat(11)); // larger than the bound: not kept, and the others stay
    expect(keys(cache, ['b', 'd', 'e', 'f'])).toEqual(['b', 'd', 'e']);
  });

  it('keeps no value over its largest entry, forgetting what its key held', () => {
    const cache = new SizedCache<string, string>(100, 10, (value) => value.length, 4);
    cache.set('a', 'xxxx');
    cache.set('b', 'xxxx');
    cache.set('a', 'xxxxx');
    expect(keys(cache, ['a', 'b'])).toEqual(['b']);
  });
});

describe('ReadCache', () => {
  const answer = (characters: number) => [{ _id: 'x'.repeat(characters - 13) }]; // [{"_id":"…"}]

  it('holds at most 8 M characters of answers, the least recently used dropped first', () => {
    const cache = new ReadCache();
    for (let i = 0; i < 10; i++) cache.set(`q${i}`, answer(1_000_000));
    expect(cache.get('q0')).toBeUndefined();
    expect(cache.get('q1')).toBeUndefined();
    expect(cache.get('q2')).toEqual(answer(1_000_000));
    cache.set('q10', answer(1_000_000)); // q2 was used last: q3 goes
    expect(cache.get('q3')).toBeUndefined();
    expect(cache.get('q2')).toEqual(answer(1_000_000));
  });

  it('counts the frozen copy of a shared read as much again as its text', () => {
    const cache = new ReadCache();
    for (let i = 0; i < 10; i++) cache.set(`q${i}`, answer(500_000));
    for (let i = 0; i < 6; i++) expect(cache.get(`q${i}`, true)).toEqual(answer(500_000)); // 8 M characters now
    expect(cache.get('q6', true)).toEqual(answer(500_000)); // q7, the least recently used, goes
    expect(['q0', 'q1', 'q2', 'q3', 'q4', 'q5', 'q6', 'q7', 'q8', 'q9'].filter((key) => cache.get(key) === undefined)).toEqual(['q7']);
  });

  it('reads an answer over 1 M characters again each time, without pushing the others out', () => {
    const cache = new ReadCache();
    cache.set('small', answer(100));
    cache.set('huge', answer(2_000_000));
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.get('small')).toEqual(answer(100));
  });
});
