import { SizedCache } from '../runtime/sized-cache.ts';
import { exactJson } from './sqlite/update.ts';

/** What the answers hold at most, in characters of their JSON. */
const MAX_CHARACTERS = 8 * 1024 * 1024;
/** An answer larger than this is read again each time rather than push the others out. */
const MAX_ANSWER_CHARACTERS = 1024 * 1024;

/**
 * Answers of `find` on a collection declared read-mostly (`cacheReads`), kept in memory: the API
 * key → project lookup and the workflows an event starts are asked on every tracked event and
 * change a few times a day. The store that owns it clears it on every write it makes to the
 * collection (the embedded store before the write runs: writes and reads are synchronous there, so
 * it is exact; the MongoDB one also when another replica says it wrote, see adapters/mongo/store.ts,
 * where `maxAgeMs` bounds what a lost message could leave stale). Answers are kept as JSON text, so
 * every hit is a fresh copy. Bounded: at most `limit` answers and MAX_CHARACTERS of them, the least
 * recently used dropped first.
 */
export class ReadCache {
  readonly #answers: SizedCache<string, { text: string; at: number }>;
  readonly #maxAgeMs: number;

  constructor(limit = 1_000, maxAgeMs = Infinity) {
    this.#answers = new SizedCache(limit, MAX_CHARACTERS, (answer) => answer.text.length, MAX_ANSWER_CHARACTERS);
    this.#maxAgeMs = maxAgeMs;
  }

  /**
   * The cache key of a query, or undefined for one JSON cannot say exactly (a RegExp, a Date, an
   * undefined value: `{a: undefined}` is not the filter `{}`).
   */
  static key(filter: unknown, options: unknown): string | undefined {
    return exactJson([filter, options]);
  }

  get<T>(key: string): T[] | undefined {
    const answer = this.#answers.get(key);
    if (answer === undefined) return undefined;
    if (performance.now() - answer.at > this.#maxAgeMs) {
      this.#answers.delete(key);
      return undefined;
    }
    this.#answers.set(key, answer); // the most recently used
    return JSON.parse(answer.text) as T[];
  }

  set(key: string, answer: unknown[]): void {
    this.#answers.set(key, { text: JSON.stringify(answer), at: performance.now() });
  }

  clear(): void {
    this.#answers.clear();
  }
}
