import { exactJson } from './update.ts';

/**
 * Answers of `find` on a collection declared read-mostly (`cacheReads`), kept in memory: the API
 * key → project lookup and the workflows an event starts are asked on every tracked event and
 * change a few times a day. Exact, not brief: every write to the collection clears its answers
 * before it runs (writes and reads are synchronous in this process, so none slips between), and a
 * failed commit clears them all. Answers are kept as JSON text, so every hit is a fresh copy.
 * Bounded: at most `limit` answers per collection, the least recently used dropped first.
 */
export class ReadCache {
  readonly #answers = new Map<string, string>();
  readonly #limit: number;

  constructor(limit = 1_000) {
    this.#limit = limit;
  }

  /**
   * The cache key of a query, or undefined for one JSON cannot say exactly (a RegExp, a Date, an
   * undefined value: `{a: undefined}` is not the filter `{}`).
   */
  static key(filter: unknown, options: unknown): string | undefined {
    return exactJson([filter, options]);
  }

  get<T>(key: string): T[] | undefined {
    const text = this.#answers.get(key);
    if (text === undefined) return undefined;
    this.#answers.delete(key);
    this.#answers.set(key, text);
    return JSON.parse(text) as T[];
  }

  set(key: string, answer: unknown[]): void {
    if (this.#answers.size >= this.#limit) this.#answers.delete(this.#answers.keys().next().value!);
    this.#answers.set(key, JSON.stringify(answer));
  }

  clear(): void {
    this.#answers.clear();
  }
}
