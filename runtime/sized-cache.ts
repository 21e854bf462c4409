/**
 * A Map of the most recently set entries, at most `maxEntries` of them and `maxSize` in all (each
 * entry's size by `sizeOf`), the oldest set forgotten first; a value over `maxEntrySize` is not
 * kept at all (its key forgotten), so that one large value does not push out all the others. What
 * a sending thread keeps of the bodies it made (apps/mailer/compose.ts, quoted-printable.ts), the
 * stores' answers of read-mostly collections (adapters/read-cache.ts) and the shared contents of
 * emails as read (domain/mail/outbound.ts).
 */
export class SizedCache<K, V> {
  readonly #entries = new Map<K, V>();
  #size = 0;
  readonly #maxEntries: number;
  readonly #maxSize: number;
  readonly #maxEntrySize: number;
  readonly #sizeOf: (value: V) => number;

  constructor(maxEntries: number, maxSize: number, sizeOf: (value: V) => number, maxEntrySize = maxSize) {
    this.#maxEntries = maxEntries;
    this.#maxSize = maxSize;
    this.#sizeOf = sizeOf;
    this.#maxEntrySize = maxEntrySize;
  }

  get(key: K): V | undefined {
    return this.#entries.get(key);
  }

  /** The key's value, set last (the newest); then the oldest go until both bounds hold. */
  set(key: K, value: V): void {
    this.delete(key);
    const size = this.#sizeOf(value);
    if (size > this.#maxEntrySize) return;
    this.#entries.set(key, value);
    this.#size += size;
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

  clear(): void {
    this.#entries.clear();
    this.#size = 0;
  }
}
