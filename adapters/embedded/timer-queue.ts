/**
 * A keyed min-heap of due times driven by ONE timer, shared by the embedded actor host
 * (reminders) and the embedded pub/sub (deliveries and retries).
 *
 * Memory per entry is a key string, two numbers and a Map slot: no object per entry, so 100k
 * waiting entries cost a few megabytes. Ties on the due time keep insertion order.
 *
 * Consumer-driven: the timer only calls `onDue()`; the consumer then calls `takeDue()` for as
 * many entries as it has capacity for. When `takeDue()` finds nothing due it arms the timer for
 * the earliest entry, so a consumer that stops taking (because it is busy) causes no busy loop.
 * Timers are unref'd, capped at setTimeout's maximum (~24.8 days: a longer wait simply wakes
 * once early and re-arms), and run their callback outside any AsyncLocalStorage context of
 * whoever happened to schedule the entry.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const MAX_TIMEOUT_MS = 2_147_483_647;

/** Runs a function with every AsyncLocalStorage store empty (as captured when this module loaded). */
export const runDetached: <R>(fn: () => R) => R = AsyncLocalStorage.snapshot();

export class TimerQueue {
  readonly #onDue: () => void;
  readonly #keys: string[] = [];
  readonly #due: number[] = [];
  readonly #seq: number[] = [];
  readonly #pos = new Map<string, number>();
  #nextSeq = 0;
  #paused = true;
  #timer: NodeJS.Timeout | undefined;
  #armedFor = Infinity;

  /** Starts paused: entries can be added, but no timer runs until `resume()`. */
  constructor(onDue: () => void) {
    this.#onDue = onDue;
  }

  get size(): number {
    return this.#keys.length;
  }

  has(key: string): boolean {
    return this.#pos.has(key);
  }

  /** Due time (ms since epoch) of `key`, or undefined. */
  dueOf(key: string): number | undefined {
    const i = this.#pos.get(key);
    return i === undefined ? undefined : this.#due[i];
  }

  /** Adds `key` due at `dueMs`, or moves it there if present (it then queues behind equal due times). */
  set(key: string, dueMs: number): void {
    if (!Number.isFinite(dueMs)) throw new RangeError(`invalid due time for ${key}`);
    const i = this.#pos.get(key);
    const seq = this.#nextSeq++;
    if (i === undefined) {
      const n = this.#keys.length;
      this.#keys.push(key);
      this.#due.push(dueMs);
      this.#seq.push(seq);
      this.#pos.set(key, n);
      this.#up(n);
    } else {
      this.#due[i] = dueMs;
      this.#seq[i] = seq;
      this.#down(this.#up(i));
    }
    this.#maybeArm(dueMs);
  }

  /** Adds `key` unless it is already queued; returns whether it added it. */
  setIfAbsent(key: string, dueMs: number): boolean {
    if (this.#pos.has(key)) return false;
    this.set(key, dueMs);
    return true;
  }

  delete(key: string): boolean {
    const i = this.#pos.get(key);
    if (i === undefined) return false;
    this.#removeAt(i);
    return true;
  }

  /**
   * Removes and returns the earliest entry if it is due at `now`. Otherwise returns undefined
   * and (unless paused) arms the timer for the earliest entry.
   */
  takeDue(now: number = Date.now()): string | undefined {
    if (this.#keys.length > 0 && this.#due[0] <= now) {
      const key = this.#keys[0];
      this.#removeAt(0);
      return key;
    }
    if (this.#keys.length > 0) this.#maybeArm(this.#due[0]);
    return undefined;
  }

  /** Lets the timer run; wakes the consumer soon if something is due. */
  resume(): void {
    this.#paused = false;
    if (this.#keys.length > 0) this.#maybeArm(this.#due[0]);
  }

  /** Stops the timer; entries are kept. */
  pause(): void {
    this.#paused = true;
    this.#disarm();
  }

  /** Drops every entry (and the timer). */
  clear(): void {
    this.#disarm();
    this.#keys.length = 0;
    this.#due.length = 0;
    this.#seq.length = 0;
    this.#pos.clear();
  }

  #maybeArm(dueMs: number): void {
    if (this.#paused || dueMs >= this.#armedFor) return;
    this.#disarm();
    const delay = Math.min(Math.max(0, dueMs - Date.now()), MAX_TIMEOUT_MS);
    this.#armedFor = dueMs;
    this.#timer = runDetached(() =>
      setTimeout(() => {
        this.#timer = undefined;
        this.#armedFor = Infinity;
        this.#onDue();
      }, delay),
    );
    this.#timer.unref();
  }

  #disarm(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Infinity;
  }

  #removeAt(i: number): void {
    const key = this.#keys[i];
    this.#pos.delete(key);
    const last = this.#keys.length - 1;
    const lastKey = this.#keys.pop() as string;
    const lastDue = this.#due.pop() as number;
    const lastSeq = this.#seq.pop() as number;
    if (i === last) return;
    this.#keys[i] = lastKey;
    this.#due[i] = lastDue;
    this.#seq[i] = lastSeq;
    this.#pos.set(lastKey, i);
    this.#down(this.#up(i));
  }

  #less(a: number, b: number): boolean {
    const da = this.#due[a];
    const db = this.#due[b];
    return da < db || (da === db && this.#seq[a] < this.#seq[b]);
  }

  #swap(a: number, b: number): void {
    const keys = this.#keys;
    const due = this.#due;
    const seq = this.#seq;
    const k = keys[a];
    keys[a] = keys[b];
    keys[b] = k;
    const d = due[a];
    due[a] = due[b];
    due[b] = d;
    const s = seq[a];
    seq[a] = seq[b];
    seq[b] = s;
    this.#pos.set(keys[a], a);
    this.#pos.set(keys[b], b);
  }

  #up(i: number): number {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) break;
      this.#swap(i, parent);
      i = parent;
    }
    return i;
  }

  #down(i: number): number {
    const n = this.#keys.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) return i;
      const r = l + 1;
      const child = r < n && this.#less(r, l) ? r : l;
      if (!this.#less(child, i)) return i;
      this.#swap(i, child);
      i = child;
    }
  }
}
