/**
 * Secondary indexes of the embedded store: a map from the tuple of a document's values for the
 * index fields to the `_id`s holding that tuple. Like MongoDB, a field holding an array is indexed
 * once per element ("multikey") and a missing field is indexed as null (so a unique index allows
 * only one document without the field).
 */
import type { Doc, Filter } from '../../ports/store.ts';

type Scalar = string | number | boolean;

export class SecondaryIndex {
  readonly fields: string[];
  readonly unique: boolean;
  readonly #paths: string[][];
  /**
   * Tuple key (see tupleKey) → the ids holding it, in the order they arrived. A lone id is kept
   * as a bare string: most keys of a unique or selective index have one holder, and a Set each
   * would cost hundreds of bytes per document.
   */
  readonly #buckets = new Map<string, string | Set<string>>();

  constructor(fields: string[], unique: boolean) {
    this.fields = fields;
    this.unique = unique;
    this.#paths = fields.map((field) => field.split('.'));
  }

  /** The distinct tuple keys a document is indexed under (one, unless a field holds an array). */
  keysOf(doc: Doc): string[] {
    // Fast path (nearly every document): no arrays on the way, so exactly one tuple.
    const tuple: unknown[] = [];
    for (const parts of this.#paths) {
      const value = plainValue(doc, parts);
      if (value === HAS_ARRAY) return this.#multiKeys(doc);
      tuple.push(value);
    }
    return [tupleKey(tuple)];
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
    return bucket === undefined ? 0 : typeof bucket === 'string' ? 1 : bucket.size;
  }

  ids(key: string): Iterable<string> {
    const bucket = this.#buckets.get(key);
    return bucket === undefined ? [] : typeof bucket === 'string' ? [bucket] : bucket;
  }

  add(id: string, keys: string[]): void {
    for (const key of keys) {
      const bucket = this.#buckets.get(key);
      if (bucket === undefined) this.#buckets.set(key, id);
      else if (typeof bucket !== 'string') bucket.add(id);
      else if (bucket !== id) this.#buckets.set(key, new Set([bucket, id]));
    }
  }

  remove(id: string, keys: string[]): void {
    for (const key of keys) {
      const bucket = this.#buckets.get(key);
      if (bucket === id) this.#buckets.delete(key);
      else if (typeof bucket === 'object') {
        bucket.delete(id);
        if (bucket.size === 0) this.#buckets.delete(key);
      }
    }
  }

  /**
   * The lookup key for `filter` if it pins every index field to one scalar, so the bucket holds
   * every document that could match (mingo still tests each of them).
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
