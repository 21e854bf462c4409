/**
 * The distributed DocumentStore: the official MongoDB driver, nearly one to one with the port.
 * Tested against FerretDB (PostgreSQL backend); production points MONGODB_URL at MongoDB.
 */
import { MongoClient, MongoServerError, type Collection as DriverCollection, type Db } from 'mongodb';
import {
  DuplicateKeyError,
  type Collection,
  type Doc,
  type DocumentStore,
  type Filter,
  type FindOptions,
  type IndexSpec,
  type Update,
  type UpdateResult,
} from '../../ports/store.ts';

export class MongoStore implements DocumentStore {
  readonly #client: MongoClient;
  readonly #db: Db;

  private constructor(client: MongoClient, db: Db) {
    this.#client = client;
    this.#db = db;
  }

  /** Connects to `url`; the database is the one the URL names, else `mailroom`. */
  static async connect(url: string): Promise<MongoStore> {
    const client = new MongoClient(url, { serverSelectionTimeoutMS: 10_000 });
    await client.connect();
    return new MongoStore(client, client.db());
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    return new MongoCollection<T>(this.#db.collection(name) as unknown as DriverCollection<T>);
  }

  /**
   * Creates only the indexes that are missing. MongoDB treats re-creating an index as a no-op,
   * but FerretDB 1.24 drops the connection on it, and on two clients creating one at once; so
   * look first, and after a failure look again (another replica may have created it meanwhile).
   */
  /** Not cached yet: replicas would have to tell each other of every write (issue #11). */
  cacheReads(): void {}

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

  constructor(collection: DriverCollection<T>) {
    this.#c = collection;
  }

  get #name() {
    return this.#c.collectionName;
  }

  async insertOne(doc: T): Promise<void> {
    await mapDuplicate(this.#name, () => this.#c.insertOne(doc as never));
  }

  async insertMany(docs: T[]): Promise<void> {
    if (docs.length === 0) return;
    await mapDuplicate(this.#name, () => this.#c.insertMany(docs as never[], { ordered: true }));
  }

  async findOne(filter: Filter, options?: FindOptions): Promise<T | null> {
    return (await this.#c.findOne(filter as never, findOptions(options))) as T | null;
  }

  async find(filter: Filter, options?: FindOptions): Promise<T[]> {
    return (await this.#c.find(filter as never, findOptions(options)).toArray()) as T[];
  }

  countDocuments(filter: Filter): Promise<number> {
    return this.#c.countDocuments(filter as never);
  }

  async replaceOne(filter: Filter, doc: T, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    const r = await mapDuplicate(this.#name, () => this.#c.replaceOne(filter as never, doc as never, { upsert: options.upsert ?? false }));
    return result(r);
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    const r = await mapDuplicate(this.#name, () => this.#c.updateOne(filter as never, update as never, { upsert: options.upsert ?? false }));
    return result(r);
  }

  async updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    return result(await mapDuplicate(this.#name, () => this.#c.updateMany(filter as never, update as never)));
  }

  async findOneAndUpdate(
    filter: Filter,
    update: Update,
    options: { upsert?: boolean; returnDocument?: 'before' | 'after' } = {},
  ): Promise<T | null> {
    return (await mapDuplicate(this.#name, () =>
      this.#c.findOneAndUpdate(filter as never, update as never, {
        upsert: options.upsert ?? false,
        returnDocument: options.returnDocument ?? 'after',
        includeResultMetadata: false,
      }),
    )) as T | null;
  }

  async deleteOne(filter: Filter): Promise<number> {
    return (await this.#c.deleteOne(filter as never)).deletedCount;
  }

  async deleteMany(filter: Filter): Promise<number> {
    return (await this.#c.deleteMany(filter as never)).deletedCount;
  }

  async aggregate<R = Doc>(pipeline: Record<string, unknown>[]): Promise<R[]> {
    return (await this.#c.aggregate(pipeline).toArray()) as R[];
  }
}

function result(r: { matchedCount: number; modifiedCount: number; upsertedId?: unknown }): UpdateResult {
  return {
    matched: r.matchedCount,
    modified: r.modifiedCount,
    ...(r.upsertedId != null ? { upsertedId: String(r.upsertedId) } : {}),
  };
}
