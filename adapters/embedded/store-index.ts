/**
 * Secondary indexes of the embedded store: a map from the tuple of a document's values for the
 * index fields to the documents holding that tuple. Buckets hold the stored objects themselves,
 * so a scan of a bucket reads them without a lookup in the collection's `_id` map per document
 * (a cache miss or more each, which cost more than the rest of a big scan); every write moves
 * the document's new version into its buckets (see move). Like MongoDB, a field holding an array
 * is indexed once per element ("multikey") and a missing field is indexed as null (so a unique
 * index allows only one document without the field).
 *
 * While no document meets an array on an index's paths, the index is exact for plain equality:
 * a document is in the bucket of `[v1, v2]` exactly when MongoDB's (and mingo's) `{f1: v1, f2: v2}`
 * matches it, for string, boolean and finite number values (JSON tells "1" from 1 and true from
 * "true", and a missing field's null never equals such a value). The store then answers those
 * filters from the bucket alone.
 */
import type { Doc, Filter } from '../../ports/store.ts';

type Scalar = string | number | boolean;

/** The keys one document is indexed under, and whether an array on the way made it multikey. */
export interface IndexEntry {
  keys: string[];
  multikey: boolean;
}

export class SecondaryIndex {
  readonly fields: string[];
  readonly unique: boolean;
  readonly #paths: string[][];
  /**
   * Tuple key (see tupleKey) → the documents holding it, by `_id` in the order they arrived (a
   * new version of a document keeps its place). A lone holder is kept bare: most keys of a
   * unique or selective index have one, and a Map each would cost hundreds of bytes per document.
   */
  readonly #buckets = new Map<string, Doc | Map<string, Doc>>();
  /** How many indexed documents meet an array on one of the index paths. */
  #multikeyDocs = 0;

  constructor(fields: string[], unique: boolean) {
    this.fields = fields;
    this.unique = unique;
    this.#paths = fields.map((field) => field.split('.'));
  }

  /** The distinct tuple keys a document is indexed under (one, unless a field holds an array). */
  keysOf(doc: Doc): string[] {
    return this.entryOf(doc).keys;
  }

  entryOf(doc: Doc): IndexEntry {
    // Fast path (nearly every document): no arrays on the way, so exactly one tuple.
    const tuple: unknown[] = [];
    for (const parts of this.#paths) {
      const value = plainValue(doc, parts);
      if (value === HAS_ARRAY) return { keys: this.#multiKeys(doc), multikey: true };
      tuple.push(value);
    }
    return { keys: [tupleKey(tuple)], multikey: false };
  }

  /**
   * True while no indexed document meets an array on the index paths: then every document in
   * the bucket of a lookup key matches the equality filter that gave the key (see the top).
   */
  get exact(): boolean {
    return this.#multikeyDocs === 0;
  }

  /**
   * Re-indexes document `id` from its indexed version `before` to `after` (either may be absent:
   * an insert or a delete). Under unchanged keys the new version takes the old one's place.
   */
  move(id: string, before: Doc | undefined, after: Doc | undefined): void {
    const old = before ? this.entryOf(before) : undefined;
    const next = after ? this.entryOf(after) : undefined;
    if (old?.multikey) this.#multikeyDocs--;
    if (next?.multikey) this.#multikeyDocs++;
    const oldKeys = old?.keys ?? [];
    const newKeys = next?.keys ?? [];
    if (after && oldKeys.length === newKeys.length && oldKeys.every((key, i) => key === newKeys[i])) {
      this.#replace(id, after, newKeys);
      return;
    }
    this.#remove(id, oldKeys);
    if (after) this.#add(id, after, newKeys);
  }

  /** Indexes a document that is not indexed yet, from its entry (see entryOf). */
  insert(doc: Doc, entry: IndexEntry): void {
    if (entry.multikey) this.#multikeyDocs++;
    this.#add(doc._id, doc, entry.keys);
  }

  #multiKeys(doc: Doc): string[] {
    const perField = this.#paths.map((parts) => valuesAtPath(doc, parts));
    let tuples: unknown[][] = [[]];
    for (const values of perField) tuples = tuples.flatMap((tuple) => values.map((value) => [...tuple, value]));
    return [...new Set(tuples.map(tupleKey))];
  }

  /** How many documents hold `key`. */
  count(key: string): number {
    const bucket = this.#buckets.get(key);
    return bucket === undefined ? 0 : bucket instanceof Map ? bucket.size : 1;
  }

  /** The stored documents holding `key`, in the order they arrived. */
  docs(key: string): Iterable<Doc> {
    const bucket = this.#buckets.get(key);
    return bucket === undefined ? [] : bucket instanceof Map ? bucket.values() : [bucket];
  }

  #add(id: string, doc: Doc, keys: string[]): void {
    for (const key of keys) {
      const bucket = this.#buckets.get(key);
      if (bucket === undefined) this.#buckets.set(key, doc);
      else if (bucket instanceof Map) bucket.set(id, doc);
      else if (bucket._id === id) this.#buckets.set(key, doc);
      else this.#buckets.set(key, new Map([[bucket._id, bucket], [id, doc]]));
    }
  }

  #replace(id: string, doc: Doc, keys: string[]): void {
    for (const key of keys) {
      const bucket = this.#buckets.get(key);
      if (bucket instanceof Map) {
        if (bucket.has(id)) bucket.set(id, doc);
      } else if (bucket?._id === id) this.#buckets.set(key, doc);
    }
  }

  #remove(id: string, keys: string[]): void {
    for (const key of keys) {
      const bucket = this.#buckets.get(key);
      if (bucket instanceof Map) {
        bucket.delete(id);
        if (bucket.size === 0) this.#buckets.delete(key);
      } else if (bucket?._id === id) this.#buckets.delete(key);
    }
  }

  /**
   * The lookup key for `filter` if it pins every index field to one scalar, so the bucket holds
   * every document that could match (the store still tests them, unless the index is exact and
   * the filter says nothing else; see the top of this file).
   */
  lookupKey(filter: Filter): string | undefined {
    const values: Scalar[] = [];
    for (const field of this.fields) {
      const value = equalityValue(filter[field]);
      if (value === undefined) return undefined;
      values.push(value);
    }
    return tupleKey(values);
  }
}

/** The index key of one tuple; JSON keeps "1" and 1 apart and prints -0 as 0, like BSON compares. */
export function tupleKey(values: unknown[]): string {
  return JSON.stringify(values);
}

/** A plain-equality operand a hash index can answer: `'x'`, `3`, `true`, or `{ $eq: 'x' }`. */
export function equalityValue(condition: unknown): Scalar | undefined {
  if (isScalar(condition)) return condition;
  if (condition && typeof condition === 'object' && !Array.isArray(condition)) {
    const keys = Object.keys(condition);
    const operand = (condition as Record<string, unknown>).$eq;
    if (keys.length === 1 && keys[0] === '$eq' && isScalar(operand)) return operand;
  }
  return undefined;
}

/**
 * The operand of a plain equality whose meaning is `===` on a non-array value: a string, a
 * boolean or a finite number (Infinity would look like null in an index key), bare or in `$eq`.
 */
export function exactEqualityValue(condition: unknown): Scalar | undefined {
  const value = equalityValue(condition);
  return typeof value === 'number' && !Number.isFinite(value) ? undefined : value;
}

function isScalar(value: unknown): value is Scalar {
  return typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && !Number.isNaN(value));
}

const HAS_ARRAY = Symbol('has array');

/** The value at `parts` (null when missing), or HAS_ARRAY when an array is met on the way. */
function plainValue(doc: unknown, parts: string[]): unknown {
  let value = doc;
  for (const part of parts) {
    if (Array.isArray(value)) return HAS_ARRAY;
    if (!value || typeof value !== 'object') return null;
    value = (value as Record<string, unknown>)[part];
  }
  return Array.isArray(value) ? HAS_ARRAY : (value ?? null);
}

/**
 * Every value a MongoDB equality query on `path` can match in `doc`: arrays along the way are
 * traversed (`items.name` reaches each item's name), an array at the end contributes each element,
 * and a missing field contributes null.
 */
function valuesAtPath(doc: unknown, parts: string[]): unknown[] {
  const out: unknown[] = [];
  collect(doc, parts, 0, out);
  return out.length ? out : [null];
}

function collect(value: unknown, parts: string[], depth: number, out: unknown[]): void {
  if (depth === parts.length) {
    if (Array.isArray(value)) out.push(...(value.length ? value : [null]));
    else out.push(value ?? null);
    return;
  }
  if (Array.isArray(value)) {
    const part = parts[depth];
    if (/^\d+$/.test(part)) collect(value[Number(part)], parts, depth + 1, out);
    for (const element of value) {
      if (element && typeof element === 'object' && !Array.isArray(element)) collect(element, parts, depth, out);
    }
    return;
  }
  if (value && typeof value === 'object') collect((value as Record<string, unknown>)[parts[depth]], parts, depth + 1, out);
  else out.push(null);
}
