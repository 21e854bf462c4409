/**
 * The document store port: the subset of MongoDB's collection API that the product uses.
 * The embedded adapter evaluates it with mingo; the distributed adapter is the mongodb driver.
 * Every `_id` is a string chosen by the caller, and every timestamp is an ISO 8601 string,
 * so documents round-trip through JSON unchanged and string order is time order.
 */
export type Doc = { _id: string; [key: string]: unknown };

/** A MongoDB query document, e.g. `{ projectId, email: { $regex: 'ann', $options: 'i' } }`. */
export type Filter = Record<string, unknown>;

/**
 * A MongoDB update document using `$set`, `$unset`, `$inc`, `$setOnInsert`, `$push`, `$pull`,
 * `$addToSet`, `$max`, `$min`. An upsert must name `_id` in the filter or in `$setOnInsert`.
 */
export type Update = Record<string, unknown>;

export type SortSpec = Record<string, 1 | -1>;

export interface FindOptions {
  sort?: SortSpec;
  skip?: number;
  limit?: number;
  /** Inclusion (`{email: 1}`) or exclusion (`{data: 0}`) projection; `_id` is always kept. */
  projection?: Record<string, 0 | 1>;
  /**
   * The caller only reads the answer: a collection that caches its reads (cacheReads) may then
   * answer with one deep-frozen copy it keeps, rather than a fresh copy each time.
   */
  shared?: boolean;
}

export interface IndexSpec {
  /** Fields in order; equality lookups on all of them use the index. */
  keys: Record<string, 1 | -1>;
  unique?: boolean;
}

export interface UpdateResult {
  matched: number;
  modified: number;
  /** The `_id` of the inserted document when an upsert inserted one. */
  upsertedId?: string;
}

/** The ids of a condition `{$in: [ids]}` on `_id` when it is only that, with string ids; undefined for any other. */
export function idList(condition: unknown): string[] | undefined {
  if (typeof condition !== 'object' || condition === null || Object.keys(condition).length !== 1) return undefined;
  const list = (condition as { $in?: unknown }).$in;
  return Array.isArray(list) && list.every((id) => typeof id === 'string') ? list : undefined;
}

/** Thrown when a write would give two documents the same `_id` or the same unique-index key. */
export class DuplicateKeyError extends Error {
  readonly collection: string;
  readonly key: string;

  constructor(collection: string, key: string) {
    super(`duplicate key in ${collection}: ${key}`);
    this.name = 'DuplicateKeyError';
    this.collection = collection;
    this.key = key;
  }
}

export interface Collection<T extends Doc = Doc> {
  insertOne(doc: T): Promise<void>;
  /** Inserts in order; stops at the first duplicate and throws DuplicateKeyError. */
  insertMany(docs: T[]): Promise<void>;
  /**
   * Inserts each document whose `_id` is not taken and answers the ids it inserted (records with
   * given ids, where one already there is a repeat). A duplicate on another unique index still
   * throws DuplicateKeyError. Not atomic as a whole.
   */
  insertNew(docs: T[]): Promise<string[]>;
  findOne(filter: Filter, options?: FindOptions): Promise<T | null>;
  find(filter: Filter, options?: FindOptions): Promise<T[]>;
  countDocuments(filter: Filter): Promise<number>;
  /** Replaces the first match whole; with `upsert`, inserts `doc` when nothing matches. */
  replaceOne(filter: Filter, doc: T, options?: { upsert?: boolean }): Promise<UpdateResult>;
  updateOne(filter: Filter, update: Update, options?: { upsert?: boolean }): Promise<UpdateResult>;
  updateMany(filter: Filter, update: Update): Promise<UpdateResult>;
  /** Atomic read-modify-write of one document; returns it before or after (default) the update. */
  findOneAndUpdate(
    filter: Filter,
    update: Update,
    options?: { upsert?: boolean; returnDocument?: 'before' | 'after' },
  ): Promise<T | null>;
  deleteOne(filter: Filter): Promise<number>;
  deleteMany(filter: Filter): Promise<number>;
  /** Stages both MongoDB and FerretDB accept: $match $group($sum) $sort $limit $skip $project $unwind $count. */
  aggregate<R = Doc>(pipeline: Record<string, unknown>[]): Promise<R[]>;
}

export interface DocumentStore {
  collection<T extends Doc = Doc>(name: string): Collection<T>;
  /** Idempotent; call at start-up for every index a hot query needs. */
  ensureIndexes(collection: string, indexes: IndexSpec[]): Promise<void>;
  /**
   * Declares a small collection that hot paths read and few writes change (projects, workflows):
   * the store may answer `find`/`findOne` on it from memory, but never with an answer that a
   * write it acknowledged has changed.
   */
  cacheReads(collection: string): void;
  /**
   * Runs `work` so that the writes it makes are committed together or not at all, and resolves
   * once they are durable: the embedded SQLite store's unit (an actor turn is one). A store
   * without it (MongoDB here: no transaction across documents) writes them one by one.
   */
  unit?<T>(work: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** `work` as one unit of `store` where it has units (DocumentStore.unit), its writes one by one otherwise. */
export const inUnit = <T>(store: DocumentStore, work: () => Promise<T>): Promise<T> => (store.unit ? store.unit(work) : work());
