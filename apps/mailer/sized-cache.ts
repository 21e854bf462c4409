/**
 * A Map of the most recently set entries, at most `maxEntries` of them and `maxSize` in all (each
 * entry's size by `sizeOf`), the oldest set forgotten first: what a sending thread keeps of the
 * bodies it made (compose.ts, quoted-printable.ts).
 */
export class SizedCache<K, V> {
  readonly #entries = new Map<K, V>();
  #size = 0;
  readonly #maxEntries: number;
  readonly #maxSize: number;
  readonly #sizeOf: (value: V) => number;

  constructor(maxEntries: number, maxSize: number, sizeOf: (value: V) => number) {
    this.#maxEntries = maxEntries;
    this.#maxSize = maxSize;
    this.#sizeOf = sizeOf;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  /** The key's value, set last (the newest); then the oldest go until both bounds hold. */
  set(key: K, value: V): void {
    this.delete(key);
    this.#entries.set(key, value);
    this.#size += this.#sizeOf(value);
    while (this.#entries.size > this.#maxEntries || this.#size > this.#maxSize) {
      const [oldest] = this.#entries.keys();
      this.delete(oldest);
    }
  }

  delete(key: K): void {
    if (!this.#entries.has(key)) return;
    this.#size -= this.#sizeOf(this.#entries.get(key)!);
    this.#entries.delete(key);
  }
}
