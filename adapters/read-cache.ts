import { SizedCache } from '../runtime/sized-cache.ts';
import type { FindOptions } from '../ports/store.ts';
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
 * where `maxAgeMs` bounds what a lost message could leave stale). Bounded: at most `limit` answers
 * and MAX_CHARACTERS of them, the least recently used dropped first.
 *
 * Answers are kept as JSON text, so every hit is a fresh copy; a read that says it only reads
 * (`shared`, FindOptions) gets one copy made once and deep-frozen instead, which a change would
 * throw on. The mailer's domain and footer reads for every email parsed some 3 KB of JSON each
 * time: shared, a campaign sent 1.06× the emails a second at 0.92× the CPU an email
 * (bench/results/campaign-profile.md, session 44).
 */
export class ReadCache {
  readonly #answers: SizedCache<string, Answer>;
  readonly #maxAgeMs: number;

  constructor(limit = 1_000, maxAgeMs = Infinity) {
    this.#answers = new SizedCache(limit, MAX_CHARACTERS, sizeOf, MAX_ANSWER_CHARACTERS);
    this.#maxAgeMs = maxAgeMs;
  }

  /**
   * The cache key of a query, or undefined for one JSON cannot say exactly (a RegExp, a Date, an
   * undefined value: `{a: undefined}` is not the filter `{}`). Whether the read is shared is not
   * part of it: the answer is the same.
   */
  static key(filter: unknown, { shared: _, ...options }: FindOptions): string | undefined {
    return exactJson([filter, options]);
  }

  /** The answer kept for `key`: a fresh copy, or with `shared` the frozen one. */
  get<T>(key: string, shared = false): T[] | undefined {
    let answer = this.#answers.get(key);
    if (answer === undefined) return undefined;
    if (performance.now() - answer.at > this.#maxAgeMs) {
      this.#answers.delete(key);
      return undefined;
    }
    if (shared && !answer.frozen) answer = { ...answer, frozen: deepFreeze(JSON.parse(answer.text) as unknown[]) };
    this.#answers.set(key, answer); // the most recently used, and counted with its frozen copy
    return (shared ? answer.frozen : JSON.parse(answer.text)) as T[];
  }

  set(key: string, answer: unknown[]): void {
    this.#answers.set(key, { text: JSON.stringify(answer), at: performance.now() });
  }

  clear(): void {
    this.#answers.clear();
  }
}

interface Answer {
  text: string;
  at: number;
  /** The copy shared reads get, made at the first of them. */
  frozen?: unknown[];
}

/** An answer's size in characters of its JSON; its frozen copy counted as much again (mostly the same strings). */
const sizeOf = (answer: Answer) => answer.text.length * (answer.frozen ? 2 : 1);

function deepFreeze<V>(value: V): V {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
