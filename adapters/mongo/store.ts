/**
 * The distributed DocumentStore: the official MongoDB driver, nearly one to one with the port.
 * Tested against FerretDB (PostgreSQL backend); production points MONGODB_URL at MongoDB.
 */
import { MongoBulkWriteError, MongoClient, MongoServerError, type Collection as DriverCollection, type Db } from 'mongodb';
import {
  DuplicateKeyError,
  idList,
  type Collection,
  type Doc,
  type DocumentStore,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Update,
  type UpdateResult,
} from '../../ports/store.ts';
import { ReadCache } from '../read-cache.ts';

/**
 * How long a replica keeps an answer of a read-mostly collection: what a change message lost on
 * the way (Redis pub/sub is at most once) could leave stale, at worst.
 */
const CACHE_MAX_AGE_MS = 10_000;

/** What tells the other replicas that this one wrote to a read-mostly collection (adapters/redis/store-changes.ts). */
export interface StoreChanges {
  /** Resolves once every replica has cleared its answers for `collection`, or after a bound; never rejects. */
  publish(collection: string): Promise<void>;
  close(): Promise<void>;
}

/** What a StoreChanges calls when another replica wrote, or when it may have missed some. */
export interface ChangeListener {
  changed(collection: string): void;
  resync(): void;
}

/** A replica's answers for one read-mostly collection. */
class ReplicaCache {
  readonly answers = new ReadCache(1_000, CACHE_MAX_AGE_MS);
  /** Bumped by every write to the collection, here or elsewhere: an answer read across a bump is not kept. */
  generation = 0;

  invalidate(): void {
    this.generation++;
    this.answers.clear();
  }
}

export class MongoStore implements DocumentStore {
  readonly #client: MongoClient;
  readonly #db: Db;
  readonly #caches = new Map<string, ReplicaCache>();
  #changes: StoreChanges | undefined;
  /** The server is FerretDB, which answers `{_id: {$in}}` by reading the whole collection (see idsOf). */
  #ferret = false;

  private constructor(client: MongoClient, db: Db) {
    this.#client = client;
    this.#db = db;
  }

  /**
   * Connects to `url`; the database is the one the URL names, else `mailroom`. With `changes`
   * (the replicas' channel), collections declared read-mostly are cached; without, none is.
   */
  static async connect(url: string, options: { changes?: (listener: ChangeListener) => Promise<StoreChanges> } = {}): Promise<MongoStore> {
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 10_000 });
    await client.connect();
    const store = new MongoStore(client, client.db());
    store.#ferret = 'ferretdbVersion' in (await client.db('admin').command({ buildInfo: 1 }));
    store.#changes = await options.changes?.({
      changed: (collection) => store.#caches.get(collection)?.invalidate(),
      resync: () => {
        for (const cache of store.#caches.values()) cache.invalidate();
      },
    });
    return store;
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    const cache = this.#caches.get(name);
    const changes = this.#changes;
    return new MongoCollection<T>(this.#db.collection(name) as unknown as DriverCollection<T>, cache && changes && { cache, changes }, this.#ferret);
  }

  /**
   * Creates only the indexes that are missing. MongoDB treats re-creating an index as a no-op,
   * but FerretDB 1.24 drops the connection on it, and on two clients creating one at once; so
   * look first, and after a failure look again (another replica may have created it meanwhile).
   */
  /**
   * Answers `find` and `findOne` on `collection` from this replica's memory. Every write to it
   * through this store clears them here and tells the other replicas, which clear theirs; an
   * answer is kept 10 s at most. A write answers only once every replica has cleared (or after
   * a second), so a key rotated on one replica is refused on every other one at once.
   */
  cacheReads(collection: string): void {
    if (this.#changes && !this.#caches.has(collection)) this.#caches.set(collection, new ReplicaCache());
  }

  async ensureIndexes(collection: string, indexes: IndexSpec[]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        const existing = await this.#db
          .collection(collection)
          .listIndexes()
          .toArray()
          .catch(() => []); // the collection does not exist yet
        const missing = indexes.map(declared).filter((i) => !existing.some((e) => sameKeys(e.key, i.keys)));
        if (missing.length > 0) {
          await this.#db.collection(collection).createIndexes(missing.map((i) => ({ key: i.keys, unique: i.unique ?? false })));
        }
        return;
      } catch (err) {
        if (attempt >= 5) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
      }
    }
  }

  async close(): Promise<void> {
    await this.#changes?.close();
    await this.#client.close();
  }
}

/**
 * The index as created: a non-unique one ends with `_id`, as in the embedded store, so that a page
 * of `{projectId}` sorted by `_id` (every list, a campaign's next batch) walks the index in order
 * and stops after the page; MongoDB orders equal keys of `{projectId: 1}` by record id, not `_id`,
 * and would sort every match of the project in memory (docs/indexes.md).
 */
const declared = (spec: IndexSpec): IndexSpec => (spec.unique || '_id' in spec.keys ? spec : { ...spec, keys: { ...spec.keys, _id: 1 } });

const sameKeys = (a: Record<string, unknown>, b: Record<string, unknown>) =>
  JSON.stringify(Object.entries(a)) === JSON.stringify(Object.entries(b));

/**
 * MongoDB reports a unique-index clash as error 11000; the port calls it DuplicateKeyError.
 * FerretDB 1.24 does so for inserts but answers an update that clashes with an InternalError
 * carrying its backend's message: PostgreSQL's "duplicate key value violates unique constraint"
 * (SQLSTATE 23505), or SQLite's "UNIQUE constraint failed".
 */
const isDuplicate = (err: MongoServerError) =>
  err.code === 11000 || /duplicate key value violates unique constraint|UNIQUE constraint failed/.test(err.message);

async function mapDuplicate<R>(collection: string, work: () => Promise<R>): Promise<R> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof MongoServerError && isDuplicate(err)) {
      throw new DuplicateKeyError(collection, JSON.stringify(err.keyValue ?? err.message));
    }
    throw err;
  }
}

const findOptions = (options: FindOptions = {}) => ({
  ...(options.sort ? { sort: options.sort } : {}),
  ...(options.skip ? { skip: options.skip } : {}),
  ...(options.limit ? { limit: options.limit } : {}),
  ...(options.projection ? { projection: options.projection } : {}),
});

class MongoCollection<T extends Doc> implements Collection<T> {
  readonly #c: DriverCollection<T>;
  /** For a read-mostly collection: this replica's answers, and the channel to the others. */
  readonly #cached: { cache: ReplicaCache; changes: StoreChanges } | undefined;

  readonly #ferret: boolean;

  constructor(collection: DriverCollection<T>, cached: { cache: ReplicaCache; changes: StoreChanges } | undefined, ferret: boolean) {
    this.#c = collection;
    this.#cached = cached;
    this.#ferret = ferret;
  }

  get #name() {
    return this.#c.collectionName;
  }

  async insertOne(doc: T): Promise<void> {
    await this.#write(() => mapDuplicate(this.#name, () => this.#c.insertOne(doc as never)));
  }

  async insertMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return;
    await this.#write(() => mapDuplicate(this.#name, () => this.#c.insertMany(docs as never[], { ordered: true })));
  }

  async insertNew(docs: T[]): Promise<string[]> {
    if (docs.length === 0) return [];
    const failed = new Set<number>();
    try {
      await this.#write(() => this.#c.insertMany(docs as never[], { ordered: false }));
    } catch (err) {
      const errors = err instanceof MongoBulkWriteError ? [err.writeErrors].flat() : [];
      if (errors.length === 0 || errors.some((e) => e.code !== 11000)) throw err;
      for (const e of errors) failed.add(e.index);
      // A duplicate whose _id is free was refused by another unique index: that one is an error.
      const ids = [...failed].map((i) => docs[i]._id);
      const taken = new Set((await this.find({ _id: { $in: ids } }, { projection: { _id: 1 } })).map((d) => d._id));
      const other = ids.find((id) => !taken.has(id));
      if (other !== undefined) throw new DuplicateKeyError(this.#name, JSON.stringify({ _id: other }));
    }
    return docs.filter((_, i) => !failed.has(i)).map((doc) => doc._id);
  }

  async findOne(filter: Filter, options?: FindOptions): Promise<T | null> {
    if (this.#cached) return (await this.find(filter, { ...options, limit: 1 }))[0] ?? null;
    return (await this.#c.findOne(filter as never, findOptions(options))) as T | null;
  }

  async find(filter: Filter, options?: FindOptions): Promise<T[]> {
    const cache = this.#cached?.cache;
    const key = cache && ReadCache.key(filter, options ?? {});
    const hit = key === undefined ? undefined : cache!.answers.get<T>(key, options?.shared);
    if (hit) return hit;
    const generation = cache?.generation;
    const ids = this.#ferret ? idsOf(filter, options) : undefined;
    const docs = ids
      ? (await Promise.all(ids.map((_id) => this.#c.find({ ...filter, _id } as never, findOptions(options)).toArray()))).flat() as T[]
      : ((await this.#c.find(filter as never, findOptions(options)).toArray()) as T[]);
    // Not kept if a write (here or on another replica) came while it was read: it may predate it.
    if (key !== undefined && cache!.generation === generation) cache!.answers.set(key, docs);
    return docs;
  }

  /**
   * A write; to a read-mostly collection, with this replica's answers cleared before it (no read
   * that starts now is kept) and after it (none read while it ran either), and the others told.
   */
  async #write<R>(work: () => Promise<R>): Promise<R> {
    const cached = this.#cached;
    if (!cached) return work();
    cached.cache.invalidate();
    try {
      return await work();
    } finally {
      cached.cache.invalidate();
      // Waited for, so that every replica has cleared before the caller answers (bounded: see
      // adapters/redis/store-changes.ts).
      await cached.changes.publish(this.#name);
    }
  }

  countDocuments(filter: Filter): Promise<number> {
    return this.#c.countDocuments(filter as never);
  }

  async replaceOne(filter: Filter, doc: T, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    const r = await this.#write(() => mapDuplicate(this.#name, () => this.#c.replaceOne(filter as never, doc as never, { upsert: options.upsert ?? false })));
    return result(r);
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    const r = await this.#write(() => mapDuplicate(this.#name, () => this.#c.updateOne(filter as never, update as never, { upsert: options.upsert ?? false })));
    return result(r);
  }

  async updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    return result(await this.#write(() => mapDuplicate(this.#name, () => this.#c.updateMany(filter as never, update as never))));
  }

  async findOneAndUpdate(
    filter: Filter,
    update: Update,
    options: { upsert?: boolean; returnDocument?: 'before' | 'after' } = {},
  ): Promise<T | null> {
    return (await this.#write(() =>
      mapDuplicate(this.#name, () =>
        this.#c.findOneAndUpdate(filter as never, update as never, {
          upsert: options.upsert ?? false,
          returnDocument: options.returnDocument ?? 'after',
          includeResultMetadata: false,
        }),
      ),
    )) as T | null;
  }

  async deleteOne(filter: Filter): Promise<number> {
    return (await this.#write(() => this.#c.deleteOne(filter as never))).deletedCount;
  }

  async deleteMany(filter: Filter): Promise<number> {
    return (await this.#write(() => this.#c.deleteMany(filter as never))).deletedCount;
  }

  async aggregate<R = Doc>(pipeline: Record<string, unknown>[]): Promise<R[]> {
    return (await this.#c.aggregate(pipeline).toArray()) as R[];
  }
}

/**
 * On FerretDB 1.24, the ids of a find by `{_id: {$in: ids}}` (and other fields) with no sort, skip
 * or limit, to be read one by one: FerretDB pushes only equality down to PostgreSQL, so the `$in`
 * read every document of the collection into FerretDB (a contact turn's check of its events' ids
 * read all events: the cost grew with the collection), while each `{_id}` is one index lookup
 * (scripts/stack/ferretdb-id-index.ts). MongoDB itself gets the `$in`.
 */
function idsOf(filter: Filter, options: FindOptions = {}): string[] | undefined {
  if (options.sort || options.skip || options.limit) return undefined;
  const list = idList(filter._id);
  return list && list.length <= 100 ? [...new Set(list)] : undefined;
}

function result(r: { matchedCount: number; modifiedCount: number; upsertedId?: unknown }): UpdateResult {
  return {
    matched: r.matchedCount,
    modified: r.modifiedCount,
    ...(r.upsertedId != null ? { upsertedId: String(r.upsertedId) } : {}),
  };
}
