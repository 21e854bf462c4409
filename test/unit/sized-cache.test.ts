// The bounded map the sending thread keeps its bodies in (compose.ts, quoted-printable.ts).
import { describe, expect, it } from 'vitest';
import { SizedCache } from '../../apps/mailer/sized-cache.ts';

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
    cache.set('f', 'x'.repeat(11)); // larger than the bound: nothing is left, itself included
    expect(keys(cache, ['b', 'd', 'e', 'f'])).toEqual([]);
  });
});
