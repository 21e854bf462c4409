/**
 * The embedded DocumentStore on SQLite (`node:sqlite`): one table per collection,
 * `(id TEXT UNIQUE, doc BLOB)` with the document as JSONB, and one expression index per declared
 * index (`json_extract(doc, '$.field')`). Memory is SQLite's page cache (database.ts), whatever
 * the data's size: nothing here keeps documents between calls.
 *
 * Queries: a filter compiles to SQL (filter-sql.ts) that decides most rows inside SQLite; rows it
 * leaves undecided are tested by the JavaScript matcher and then mingo, on rows streamed from
 * SQLite, so every answer is mingo's (MongoDB's) answer. Sorting is SQLite's, by MongoDB's type
 * order for scalars (null, numbers, strings); ties keep insertion order.
 *
 * Writes run synchronously inside the open transaction (database.ts), so a read-modify-write
 * (findOneAndUpdate, upserts, unique checks) is atomic in this single-threaded process, and the
 * call resolves once its commit is durable.
 *
 * Two rules of this store that MongoDB does not have, both enforced: an indexed field holds only
 * null, numbers and strings (so the indexes need not be multikey, and their order is MongoDB's),
 * and `_id` is a string.
 */
import { Context, Query as FullQuery, aggregate as mingoAggregate, find as mingoFind } from 'mingo';
import * as queryOperatorModule from 'mingo/operators/query';
import { Query as MingoQuery } from 'mingo/query';
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
import { UNDECIDED, compileFilter } from '../embedded/store-match.ts';
import { Database, type DatabaseOptions } from './database.ts';
import { BOOLEAN_COLUMN, SqlParams, columnSql, compileSql, fieldSql, registerRegex, isIndexValue, isScalar, jsonPathLiteral, type CompiledSql, type SqlValue } from './filter-sql.ts';
import { importJournal } from './journal-import.ts';
import { ReadCache } from '../read-cache.ts';
import { ScanPool } from './scan-pool.ts';
import { applyUpdate, buildUpsert, isPlainObject, plainPathParts, toStored, type Stored } from './update.ts';

export interface SqliteStoreOptions extends DatabaseOptions {
  /**
   * A count that tests the documents of at least this many rows runs on worker threads, split by
   * rowid (default 20,000: about 20 ms of a scan on the event loop). 0 sends every such count
   * there (the tests do), Infinity none.
   */
  scanWorkersFrom?: number;
}

/** How counts find the rows they scan, and where they run them. */
interface Scans {
  pool: ScanPool;
  from: number;
}

/** What the store knows of one collection: its table and the fields its indexes cover. */
interface Table {
  name: string;
  /** The quoted table name. */
  sql: string;
  /** Top-level fields some index covers, and their columns: equality on them may use the index. */
  indexed: Map<string, string>;
  /** Every indexed path, split (each once): what they may hold is checked on every write. */
  indexPaths: Map<string, string[]>;
  /**
   * The column that holds each indexed path's value (quoted), which the indexes are declared on.
   * Written with the document, and on an update only when the value changed: an update that
   * leaves the indexed fields alone (a tracked event on a contact) does not touch its indexes.
   */
  columns: Map<string, string>;
  /** The INSERT of a document and its columns (made again when a column is added, not per write). */
  insertSql: string;
  /** The fields of each unique index (`_id` is one): equality on all of them finds one document at most. */
  unique: string[][];
  /** Whether a unique index other than the id's exists (any path): an insert may then fail on it. */
  otherUnique: boolean;
  /** Answers of `find`, for a collection declared read-mostly (`cacheReads`). */
  reads?: ReadCache;
}

/** A row as the queries select it. */
interface Row {
  id: string;
  /** The document as JSON text; NULL where only projected fields were read. */
  doc: string | null;
  /** The filter's three-valued answer: 1, or null when mingo must decide. */
  sure: number | null;
}

export class SqliteStore implements DocumentStore {
  readonly #db: Database;
  readonly #tables = new Map<string, Table>();
  readonly #handles = new Map<string, SqliteCollection>();
  readonly #scans: Scans;

  private constructor(db: Database, scanWorkersFrom: number) {
    this.#db = db;
    this.#scans = { pool: new ScanPool(db.file), from: scanWorkersFrom };
    // A failed commit undid writes whose answers may have been cached since.
    db.onRollback(() => {
      for (const table of this.#tables.values()) table.reads?.clear();
    });
    registerRegex(db.sqlite);
  }

  /** Opens (or creates) the database file. */
  static async open(file: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    return new SqliteStore(new Database(file, options), options.scanWorkersFrom ?? 20_000);
  }

  get database(): Database {
    return this.#db;
  }

  /**
   * Runs an actor turn (or a group of the mailer's deliveries) as one unit: its writes are
   * committed together, and it resolves once they are durable (see database.ts).
   */
  unit<T>(turn: () => Promise<T>): Promise<T> {
    return this.#db.unit(turn);
  }

  /**
   * Copies the journal store of earlier versions (in `dir`) into the database, once; the
   * journal's lines applied, or undefined when there was nothing to import.
   */
  importJournal(dir: string): number | undefined {
    try {
      const imported = importJournal(this.#db, dir, (collection) => this.table(collection).sql);
      // The import writes documents only: the columns of indexed fields are filled after it.
      if (imported !== undefined) {
        for (const table of this.#tables.values()) {
          for (const [field, column] of table.columns) this.#fillColumn(table, field, column);
        }
      }
      return imported;
    } catch (err) {
      this.#tables.clear(); // the import's tables were rolled back with it
      throw err;
    }
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    let handle = this.#handles.get(name);
    if (!handle) this.#handles.set(name, (handle = new SqliteCollection(this.#db, () => this.table(name), this.#scans)));
    return handle as unknown as Collection<T>;
  }

  async ensureIndexes(collection: string, indexes: IndexSpec[]): Promise<void> {
    const table = this.table(collection);
    for (const spec of indexes) {
      const fields = Object.keys(spec.keys);
      const unique = spec.unique ?? false;
      if (fields.some((field) => fieldSql(field) === undefined)) throw new Error(`cannot index ${fields.join(',')} in ${collection}`);
      const named = (isUnique: boolean) => `${collection}:${fields.join(',')}${isUnique ? '' : ',_id'}`;
      const name = quote(named(unique));
      const lookup = this.#db.statement('SELECT sql FROM sqlite_master WHERE type = ? AND name = ?');
      // The name says whether it is unique, so the same fields declared the other way are found by the other name.
      if (lookup.get('index', named(!unique))) throw new Error(`index on ${fields.join(',')} in ${collection} already exists with other options`);
      const existing = lookup.get('index', named(unique)) as { sql: string } | undefined;
      // Declared on the document itself by the first SQLite version of this store: made again on the columns.
      const outdated = existing?.sql.includes('json_extract');
      if (!existing || outdated) {
        const arrays = fields.flatMap((field) => arrayTests(field)).join(' OR ');
        if (this.#db.statement(`SELECT 1 FROM ${table.sql} WHERE ${arrays} LIMIT 1`).get()) {
          throw new Error(`cannot index ${fields.join(',')} in ${collection}: a document holds an array there`);
        }
        // A non-unique index ends with the id, so that a page of `{field: v}` sorted by `_id` (every
        // list) walks the index in order and stops after the page, instead of sorting every match.
        const columns = [...(await Promise.all(fields.map((field) => this.#column(table, field)))), ...(unique ? [] : ['id'])];
        try {
          await this.#db.write(() => {
            if (outdated) this.#db.sqlite.exec(`DROP INDEX ${name}`);
            this.#db.sqlite.exec(`CREATE ${unique ? 'UNIQUE ' : ''}INDEX ${name} ON ${table.sql} (${columns.join(', ')})`);
          });
        } catch (err) {
          throw duplicateKey(collection, err) ?? err;
        }
      }
      for (const field of fields) await this.#column(table, field);
      if (unique) table.otherUnique = true;
      // Top-level fields only: equality on them compiles to exact index terms (see isPointLookup).
      if (unique && !fields.some((field) => field.includes('.')) && !table.unique.some((known) => known.join() === fields.join())) table.unique.push(fields);
    }
  }

  cacheReads(collection: string): void {
    this.table(collection).reads ??= new ReadCache();
  }

  async close(): Promise<void> {
    await this.#scans.pool.close();
    await this.#db.close();
  }

  /** The table of a collection, created on first use (MongoDB creates collections implicitly). */
  table(name: string): Table {
    this.#db.assertOpen();
    let table = this.#tables.get(name);
    if (!table) {
      if (!name || name.startsWith('sqlite_')) throw new Error(`invalid collection name: ${name}`);
      const sql = quote(name);
      // `arrays`: 0 when the document certainly holds no array (its JSON has no "["), so filters
      // can skip looking for arrays on the way to a missing field; 1 when it may (the default).
      this.#db.sqlite.exec(`CREATE TABLE IF NOT EXISTS ${sql} (id TEXT NOT NULL UNIQUE, doc BLOB NOT NULL, arrays INTEGER NOT NULL DEFAULT 1)`);
      const columns = this.#db.sqlite.prepare(`PRAGMA table_info(${sql})`).all() as { name: string }[];
      if (!columns.some((column) => column.name === 'arrays')) this.#db.sqlite.exec(`ALTER TABLE ${sql} ADD COLUMN arrays INTEGER NOT NULL DEFAULT 1`);
      const otherUnique = !!this.#db.sqlite.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql LIKE 'CREATE UNIQUE%'`).get(name);
      table = { name, sql, indexed: new Map(), indexPaths: new Map(), columns: new Map(), insertSql: insertSql(sql, []), unique: [['_id']], otherUnique };
      // The columns of fields indexed before: kept current from the first write on.
      for (const column of columns) if (column.name.startsWith(COLUMN_PREFIX)) registerColumn(table, column.name.slice(COLUMN_PREFIX.length));
      this.#tables.set(name, table);
    }
    return table;
  }

  /** The column of an indexed path, added (and filled from every document) the first time. */
  async #column(table: Table, field: string): Promise<string> {
    const known = table.columns.get(field);
    if (known) return known;
    const column = quote(`${COLUMN_PREFIX}${field}`);
    // Known from the moment it exists, so every write after this one keeps it current.
    return this.#db.write(() => {
      this.#db.sqlite.exec(`ALTER TABLE ${table.sql} ADD COLUMN ${column}`);
      this.#fillColumn(table, field, column);
      return registerColumn(table, field);
    });
  }

  /** Sets the column of an indexed field from every document (they were written without it). */
  #fillColumn(table: Table, field: string, column: string): void {
    this.#db.sqlite.exec(`UPDATE ${table.sql} SET ${column} = ${columnSql(field)!}`);
  }
}

/** The Collection port over one table. */
class SqliteCollection<T extends Doc = Doc> implements Collection<T> {
  readonly #db: Database;
  readonly #table: () => Table;
  readonly #scans: Scans;

  constructor(db: Database, table: () => Table, scans: Scans) {
    this.#db = db;
    this.#table = table;
    this.#scans = scans;
  }

  async insertOne(doc: T): Promise<void> {
    const table = this.#table();
    const stored = toStored(doc);
    await this.#write(table, () => this.#insert(table, stored), false);
  }

  async insertMany(docs: T[]): Promise<void> {
    const table = this.#table();
    const stored = docs.map((doc) => toStored(doc));
    // Ordered: the documents before a duplicate stay inserted, as in MongoDB.
    const failure = await this.#write(table, () => {
      for (const one of stored) {
        try {
          this.#insert(table, one);
        } catch (err) {
          if (err instanceof DuplicateKeyError) return err;
          throw err;
        }
      }
      return undefined;
    });
    if (failure) throw failure;
  }

  async insertNew(docs: T[]): Promise<string[]> {
    const table = this.#table();
    const stored = docs.map((doc) => toStored(doc));
    // A taken id is no failure here: with no other unique index, and every document checked
    // first, no insert can fail after another succeeded, so they need no savepoint around them.
    const savepoint = stored.length > 1 && table.otherUnique;
    if (!savepoint) for (const one of stored) checkIndexedFields(table, one.doc);
    return this.#write(table, () => stored.filter((one) => this.#insert(table, one, { unlessTaken: true })).map((one) => one.doc._id), savepoint);
  }

  async findOne(filter: Filter, options: FindOptions = {}): Promise<T | null> {
    return (await this.find(filter, { ...options, limit: 1 }))[0] ?? null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const { reads } = this.#table();
    const key = reads && ReadCache.key(filter, options);
    if (key === undefined) return this.#read(filter, options);
    const hit = reads!.get<T>(key, options.shared);
    if (hit) return hit;
    const answer = this.#read(filter, options);
    reads!.set(key, answer);
    return answer;
  }

  #read(filter: Filter, options: FindOptions): T[] {
    const projection = options.projection && Object.keys(options.projection).length ? options.projection : undefined;
    // An inclusion of top-level fields is read from SQLite field by field (see #matches).
    const fields = projection && inclusionFields(projection);
    const readable = fields?.every((field) => field === '_id' || jsonPathLiteral(field) !== undefined);
    const docs = this.#find(this.#table(), filter, options, readable ? fields : undefined);
    if (!projection || readable) return docs as T[];
    if (fields) return docs.map((doc) => project(doc, fields) as T);
    return mingoFind(docs, {}, projection).all() as T[];
  }

  async countDocuments(filter: Filter): Promise<number> {
    const table = this.#table();
    const params = new SqlParams();
    const compiled = compileSql(filter, table.indexed, params);
    const where = compiled.index.length ? `WHERE ${compiled.index.join(' AND ')}` : '';
    if (compiled.expr === '1') {
      return (this.#db.statement(`SELECT count(*) AS n FROM ${table.sql} ${where}`).get(...params.values) as { n: number }).n;
    }
    // One pass that evaluates the filter once per row: a sure match adds 1, an undecided row
    // 2^32, so the sum holds both counts. (Listing the undecided ids in the same pass, through a
    // subquery SQLite must not flatten, cost a third more on a million rows.) The undecided rows,
    // which only documents holding arrays can give, are fetched by a second pass for mingo.
    // As text: past 2^53 a number would lose the low part.
    const sum = `SELECT CAST(ifnull(sum(ifnull((${compiled.expr}) <> 0, ${UNDECIDED_WEIGHT})), 0) AS TEXT) AS total FROM ${table.sql}`;
    const total = (await this.#scanned(table, sum, where, compiled, params)) ?? (this.#db.statement(`${sum} ${where}`).get(...params.values) as { total: string }).total;
    const sure = Number(BigInt(total) % UNDECIDED_WEIGHT);
    if (BigInt(total) < UNDECIDED_WEIGHT) return sure;
    const undecided = (
      this.#db.statement(`SELECT id FROM ${table.sql} ${whereAnd(where, `(${compiled.expr}) IS NULL`)}`).all(...params.values) as { id: string }[]
    ).map((row) => row.id);
    const test = matcher(filter);
    let count = sure;
    for (const doc of this.#byIds(table, undecided)) if (test(doc)) count++;
    return count;
  }

  /**
   * `sum` (a statement yielding `total`, without its WHERE) over the rows `where` (the filter's
   * index terms) selects, on the scan workers, each summing a rowid range, when there are enough
   * rows to be worth it (and this connection's writes can be made visible to them); undefined
   * when it should run here.
   */
  async #scanned(table: Table, sum: string, where: string, compiled: CompiledSql, params: SqlParams): Promise<string | undefined> {
    const { pool, from } = this.#scans;
    const span = this.#db.statement(`SELECT min(rowid) AS lo, max(rowid) AS hi FROM ${table.sql}`).get() as { lo: number | null; hi: number | null };
    if (span.lo === null || span.hi === null || span.hi - span.lo + 1 < from) return undefined;
    const indexParams = params.values.slice(0, compiled.indexParams);
    if (where && from > 0 && (this.#db.statement(`SELECT count(*) AS n FROM (SELECT 1 FROM ${table.sql} ${where} LIMIT ${from})`).get(...indexParams) as { n: number }).n < from) {
      return undefined;
    }
    const committed = this.#db.committedForReaders();
    if (committed === false) return undefined;
    // Handed over at once when there is nothing to wait for, so that the caller's next query
    // (a page next to its total) runs here while the workers count.
    if (committed !== true) await committed.catch(() => undefined); // a failed commit was rolled back: what they see is what there is
    const n = params.values.length;
    const ranged = `${sum} ${whereAnd(where, `rowid BETWEEN ?${n + 1} AND ?${n + 2}`)}`;
    const size = pool.size;
    const step = Math.ceil((span.hi - span.lo + 1) / size);
    const parts = Array.from({ length: size }, (_, i) => [span.lo! + i * step, Math.min(span.hi!, span.lo! + (i + 1) * step - 1)]);
    try {
      const rows = (await pool.all(ranged, params.values, parts)) as { total: string }[];
      return String(rows.reduce((sum, row) => sum + BigInt(row.total), 0n));
    } catch (err) {
      // A worker that cannot answer (it could not start, say) costs the event loop, not the answer.
      console.warn(`a scan worker failed, counting on the main thread: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  }

  async replaceOne(filter: Filter, doc: T, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    const table = this.#table();
    const id = filter._id;
    if (table.columns.size === 0 && typeof id === 'string' && Object.keys(filter).length === 1 && (doc._id ?? id) === id) {
      // By id in a table without indexed fields (actor states): the row is written unless it holds
      // this very document, without reading and parsing it first.
      const stored = toStored({ ...doc, _id: id });
      return this.#write(table, () => {
        const sql = `UPDATE ${table.sql} SET doc = jsonb(?1), arrays = ?2 WHERE id = ?3 AND doc IS NOT jsonb(?1)`;
        if (Number(this.#db.statement(sql).run(stored.json, mayHoldArrays(stored.json), id).changes) > 0) return { matched: 1, modified: 1 };
        if (this.#db.statement(`SELECT 1 FROM ${table.sql} WHERE id = ?`).get(id)) return { matched: 1, modified: 0 };
        if (!options.upsert) return { matched: 0, modified: 0 };
        this.#insert(table, stored);
        return { matched: 0, modified: 0, upsertedId: id };
      }, false);
    }
    return this.#write(table, () => {
      const [current] = this.#find(table, filter, { limit: 1 });
      if (current) {
        if (doc._id !== undefined && doc._id !== current._id) throw new Error('replaceOne cannot change _id');
        const after = toStored({ ...doc, _id: current._id });
        if (after.json === JSON.stringify(current)) return { matched: 1, modified: 0 };
        this.#replace(table, after, current);
        return { matched: 1, modified: 1 };
      }
      if (!options.upsert) return { matched: 0, modified: 0 };
      const id = doc._id ?? equalityId(filter._id);
      const inserted = toStored({ ...doc, _id: requireId({ _id: id }) });
      this.#insert(table, inserted);
      return { matched: 0, modified: 0, upsertedId: inserted.doc._id };
    }, false);
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    const outcome = await this.#updateFirst(filter, update, options.upsert ?? false);
    if (outcome.kind === 'none') return { matched: 0, modified: 0 };
    if (outcome.kind === 'inserted') return { matched: 0, modified: 0, upsertedId: outcome.after._id };
    return { matched: 1, modified: outcome.after === outcome.before ? 0 : 1 };
  }

  async updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    const table = this.#table();
    return this.#write(table, () => {
      const matched = this.#find(table, filter, {});
      let modified = 0;
      for (const before of matched) {
        const after = applyUpdate(before, update, filter);
        if (!after) continue;
        this.#replace(table, after, before);
        modified++;
      }
      return { matched: matched.length, modified };
    });
  }

  async findOneAndUpdate(
    filter: Filter,
    update: Update,
    options: { upsert?: boolean; returnDocument?: 'before' | 'after' } = {},
  ): Promise<T | null> {
    const outcome = await this.#updateFirst(filter, update, options.upsert ?? false);
    if (outcome.kind === 'none') return null;
    // Either is this call's own: `before` was parsed from its row just now, and `after` made from it
    // (sharing what did not change, which nobody else holds).
    const doc = options.returnDocument === 'before' ? outcome.before : outcome.after;
    return (doc ?? null) as T | null;
  }

  async deleteOne(filter: Filter): Promise<number> {
    const table = this.#table();
    if (Object.keys(filter).length === 1 && typeof filter._id === 'string') {
      // By id (a delivered message, a claim given up): no need to read the document first.
      const id = filter._id;
      return this.#write(table, () => Number(this.#db.statement(`DELETE FROM ${table.sql} WHERE id = ?`).run(id).changes), false);
    }
    return this.#write(table, () => this.#delete(table, this.#find(table, filter, { limit: 1 })), false);
  }

  async deleteMany(filter: Filter): Promise<number> {
    const table = this.#table();
    const ids = Object.keys(filter).length === 1 ? idList(filter._id) : undefined;
    if (ids) {
      // By ids (the queue's delivered messages): one statement, no document read first.
      const list = JSON.stringify(ids);
      return this.#write(table, () => Number(this.#db.statement(`DELETE FROM ${table.sql} ${WHERE_IDS}`).run(list).changes), false);
    }
    return this.#write(table, () => this.#delete(table, this.#find(table, filter, {})));
  }

  async aggregate<R = Doc>(pipeline: Record<string, unknown>[]): Promise<R[]> {
    const table = this.#table();
    // A leading $match is answered by SQLite; the rest runs in mingo over the streamed rows,
    // except a $group counting by one field, which SQLite does (a count by event name over
    // millions of events would otherwise parse every one of them).
    const [first, ...rest] = pipeline;
    const leadingMatch = first && Object.keys(first).length === 1 ? (first.$match as Filter | undefined) : undefined;
    const stages = leadingMatch ? rest : pipeline;
    const counting = countingGroup(stages[0]);
    if (counting) return mingoAggregate(this.#countBy(table, leadingMatch ?? {}, counting), stages.slice(1)) as R[];
    const source = this.#matches(table, leadingMatch ?? {}, {});
    return mingoAggregate(source as unknown as Doc[], stages) as R[];
  }

  // ---- internals ------------------------------------------------------------------------------

  /**
   * Every write to a table goes through here: it clears the table's cached answers first.
   * `savepoint: false` where `work` cannot throw once it changed something (Database.write).
   */
  #write<R>(table: Table, work: () => R, savepoint = true): Promise<R> {
    table.reads?.clear();
    return this.#db.write(work, { savepoint });
  }

  /** The shared core of updateOne and findOneAndUpdate: update the first match, or upsert. */
  #updateFirst(filter: Filter, update: Update, upsert: boolean): Promise<UpdateOutcome> {
    const table = this.#table();
    return this.#write(table, (): UpdateOutcome => {
      const [before] = this.#find(table, filter, { limit: 1 });
      if (before) {
        const after = applyUpdate(before, update, filter);
        if (!after) return { kind: 'updated', before, after: before };
        this.#replace(table, after, before);
        return { kind: 'updated', before, after: after.doc };
      }
      if (!upsert) return { kind: 'none' };
      const inserted = buildUpsert(filter, update);
      this.#insert(table, inserted);
      return { kind: 'inserted', after: inserted.doc };
    }, false);
  }

  /** The matching documents, sorted, skipped and limited (fresh objects each), projected to `fields`. */
  #find(table: Table, filter: Filter, options: FindOptions, fields?: string[]): Doc[] {
    const { sort, skip = 0, limit } = options;
    // `{_id: 'x', …}`, the commonest query (actor state, records by id, claims, a contact's write
    // conditional on its `version`), short of the general path: one row, read by its key.
    const byIdsAlone = fields && Object.keys(filter).length === 1;
    if (typeof filter._id === 'string' && !skip) {
      if (byIdsAlone) return this.#fieldsByIds(table, [filter._id], fields);
      const doc = this.#byId(table, filter);
      return doc ? [fields ? project(doc, fields) : doc] : [];
    }
    // `{_id: {$in: ids}, …}` (a contact turn's check of its event ids): the rows by key, in the
    // general path's order, the rest of the filter decided on them.
    const ids = !sort && !skip ? idList(filter._id) : undefined;
    if (ids && byIdsAlone) return this.#fieldsByIds(table, ids, fields).slice(0, limit || undefined);
    if (ids) {
      const test = Object.keys(filter).length > 1 ? matcher(filter) : undefined;
      const out: Doc[] = [];
      for (const doc of this.#byIds(table, ids)) {
        if (test && !test(doc)) continue;
        out.push(fields ? project(doc, fields) : doc);
        if (out.length === limit) break;
      }
      return out;
    }
    const wanted = limit ? skip + limit : undefined;
    const out = [...this.#matches(table, filter, { sort, wanted, fields })];
    return skip ? out.slice(skip) : out;
  }

  /**
   * The document a filter with a string `_id` names, or null when it does not match. Equalities on top-level scalars beside `_id` are compared
   * here; anything else (a claim's `status: {$in}`, `$or`) is the JavaScript matcher's to decide
   * on the one row, which costs less than building and running the general path's SQL
   * (measured: a mailer's claim, 67 → 42 µs).
   */
  #byId(table: Table, filter: Filter): Doc | null {
    const rest = Object.keys(filter).filter((key) => key !== '_id');
    const plain = rest.every((key) => isPlainTopLevel(key) && isScalar(filter[key]));
    const row = this.#db.statement(`SELECT json(doc) AS doc FROM ${table.sql} WHERE id = ?`).get(filter._id as string) as { doc: string } | undefined;
    if (!row) return null;
    const doc = JSON.parse(row.doc) as Doc;
    if (!plain) return matcher(filter)(doc) ? doc : null;
    // MongoDB matches an array holding the value: the matcher decides those too.
    if (rest.some((key) => typeof doc[key] === 'object' && doc[key] !== null)) return matcher(filter)(doc) ? doc : null;
    return rest.every((key) => doc[key] === filter[key]) ? doc : null;
  }

  /**
   * Streams the documents matching `filter` in sort order (insertion order without one), at most
   * `wanted` of them. SQLite is asked for `wanted` rows; should mingo turn some undecided rows
   * down, it is asked again for more. With `fields` (an inclusion of top-level fields), each
   * document is projected to them, and only those fields are read out of a row SQLite decided
   * (`doc -> '$.field'`, JSON each): a page of reminders or recipients parses no whole documents.
   */
  *#matches(table: Table, filter: Filter, options: { sort?: FindOptions['sort']; wanted?: number; fields?: string[] }): Generator<Doc> {
    const { fields } = options;
    const params = new SqlParams();
    const compiled = compileSql(filter, table.indexed, params);
    const terms = [...compiled.index];
    const decided = compiled.expr === '1';
    if (!decided) terms.push(`(${compiled.expr}) IS NOT 0`);
    const where = terms.length ? `WHERE ${terms.join(' AND ')}` : '';
    const order = orderBy(options.sort, table.indexed);
    const arrays = arrayOnSortPath(options.sort, table.indexed);
    if (order === undefined || (arrays && this.#db.statement(`SELECT 1 FROM ${table.sql} ${whereAnd(where, `(${arrays})`)} LIMIT 1`).get(...params.values))) {
      // A path SQL cannot name, or an array on a sort path (MongoDB sorts an array by its
      // elements, which SQLite's order cannot say): mingo sorts every match.
      const sorted = mingoAggregate([...this.#matches(table, filter, {})], [{ $sort: options.sort }]) as Doc[];
      const page = options.wanted === undefined ? sorted : sorted.slice(0, options.wanted);
      yield* fields ? page.map((doc) => project(doc, fields)) : page;
      return;
    }
    const sure = decided ? '1' : `(${compiled.expr})`;
    const columns = fields
      ? `${decided ? 'NULL' : `CASE WHEN ${sure} IS 1 THEN NULL ELSE json(doc) END`} AS doc, ${fieldColumns(fields)}`
      : 'json(doc) AS doc';
    const select = `SELECT id, ${columns}, ${sure} AS sure FROM ${table.sql} ${where}`;
    const decider: RowDecider = { filter, fields };
    if (isPointLookup(table, filter)) {
      // One row at most: no order to keep and no page to count (a lookup by email or key hash).
      const row = this.#db.statement(select).get(...params.values) as SelectedRow | undefined;
      const doc = row && decideRow(row, decider);
      if (doc) yield doc;
      return;
    }
    const sql = `${select} ORDER BY ${order}`;
    let yielded = 0;
    let offset = 0;
    const n = params.values.length;
    const paged = `${sql} LIMIT ?${n + 1} OFFSET ?${n + 2}`;
    for (let ask = options.wanted; ; ) {
      const rowsOf = ask === undefined ? this.#db.statement(sql).iterate(...params.values) : this.#db.statement(paged).iterate(...params.values, ask, offset);
      let rows = 0;
      for (const row of rowsOf as Iterable<SelectedRow>) {
        rows++;
        const doc = decideRow(row, decider);
        if (!doc) continue;
        yield doc;
        if (options.wanted !== undefined && ++yielded >= options.wanted) return;
      }
      if (ask === undefined || rows < ask) return;
      offset += rows;
      ask = options.wanted! - yielded;
    }
  }

  /**
   * `{$group: {_id: '$field', name: {$sum: n}, ...}}` over the matches of `filter`: SQLite counts
   * the rows it decides whose key is a scalar (or missing: null); mingo groups the others (rows
   * the filter leaves undecided, keys that are arrays or objects), and the two are merged.
   */
  #countBy(table: Table, filter: Filter, group: CountingGroup): Doc[] {
    const params = new SqlParams();
    const compiled = compileSql(filter, table.indexed, params);
    const where = compiled.index.length ? `WHERE ${compiled.index.join(' AND ')}` : '';
    // An array on the way to the key makes MongoDB's key an array too.
    const onTheWay = arrayTests(group.field).slice(0, -1);
    const viaArray = onTheWay.length ? `arrays AND (${onTheWay.join(' OR ')})` : '0';
    const rows = this.#db
      .statement(
        `SELECT js, k, t, count(*) AS n, json_group_array(id) FILTER (WHERE js) AS ids FROM (
           SELECT id, k, t, (s IS NULL OR t IN ('array', 'object') OR a) AS js FROM (
             SELECT id, ${group.value} AS k, ifnull(${group.value.replace('json_extract', 'json_type')}, 'null') AS t, (${compiled.expr}) AS s, (${viaArray}) AS a
             FROM ${table.sql} ${where} LIMIT -1)
           WHERE s IS NOT 0 LIMIT -1)
         GROUP BY js, k, t`,
      )
      .all(...params.values) as { js: number; k: SqlValue; t: string; n: number; ids: string }[];
    const counts = new Map<string, { key: unknown; n: number }>();
    const add = (key: unknown, n: number) => {
      const id = JSON.stringify(key);
      const known = counts.get(id);
      if (known) known.n += n;
      else counts.set(id, { key, n });
    };
    const undecided: string[] = [];
    for (const row of rows) {
      if (row.js) undecided.push(...(JSON.parse(row.ids) as string[]));
      else add(sqlScalar(row.k, row.t), row.n);
    }
    if (undecided.length) {
      const test = matcher(filter);
      const docs = [...this.#byIds(table, undecided)].filter((doc) => test(doc));
      const groups = mingoAggregate(docs, [{ $group: { _id: `$${group.field}`, n: { $sum: 1 } } }]) as { _id: unknown; n: number }[];
      for (const { _id, n } of groups) add(_id, n);
    }
    return [...counts.values()].map(({ key, n }) => ({
      _id: key,
      ...Object.fromEntries(group.sums.map(([name, each]) => [name, n * each])),
    })) as Doc[];
  }

  /**
   * Top-level fields of the documents of these ids, in insertion order, read out of each row
   * field by field (`doc -> '$.field'`): the delivery gate asks for a contact's `subscribed` and a
   * campaign batch for its emails' `status`, and parsing whole documents for that cost more.
   */
  #fieldsByIds(table: Table, ids: string[], fields: string[]): Doc[] {
    const columns = fieldColumns(fields);
    type FieldsRow = { id: string } & Record<string, unknown>;
    if (ids.length === 1) {
      const row = this.#db.statement(`SELECT id, ${columns} FROM ${table.sql} WHERE id = ?`).get(ids[0]) as FieldsRow | undefined;
      return row ? [projectedRow(row, fields)] : [];
    }
    const rows = this.#db.statement(`SELECT id, ${columns} FROM ${table.sql} ${IN_ID_LIST}`).all(JSON.stringify(ids)) as FieldsRow[];
    return rows.map((row) => projectedRow(row, fields));
  }

  /** The documents of these ids, in insertion order (the order of a find without a sort). */
  *#byIds(table: Table, ids: string[]): Generator<Doc> {
    const statement = this.#db.statement(`SELECT json(doc) AS doc FROM ${table.sql} ${IN_ID_LIST}`);
    for (const row of statement.iterate(JSON.stringify(ids)) as Iterable<{ doc: string }>) yield JSON.parse(row.doc) as Doc;
  }

  /** Inserts the document; with `unlessTaken`, a taken `_id` inserts nothing (false) instead of throwing. */
  #insert(table: Table, stored: Stored, { unlessTaken = false } = {}): boolean {
    const id = requireId(stored.doc);
    checkIndexedFields(table, stored.doc);
    const values: SqlValue[] = [];
    for (const field of table.columns.keys()) values.push(columnValue(stored.doc, table.indexPaths.get(field)!));
    try {
      const sql = unlessTaken ? `${table.insertSql} ON CONFLICT (id) DO NOTHING` : table.insertSql;
      return this.#db.statement(sql).run(id, stored.json, mayHoldArrays(stored.json), ...values).changes > 0;
    } catch (err) {
      throw duplicateKey(table.name, err) ?? err;
    }
  }

  /** Replaces `before` (as stored) with `stored`, setting only the columns whose value changed. */
  #replace(table: Table, stored: Stored, before: Doc): void {
    checkIndexedFields(table, stored.doc);
    let sets = '';
    const values: SqlValue[] = [];
    for (const [field, column] of table.columns) {
      const parts = table.indexPaths.get(field)!;
      const value = columnValue(stored.doc, parts);
      if (value === columnValue(before, parts)) continue;
      sets += `, ${column} = ?`;
      values.push(value);
    }
    try {
      this.#db
        .statement(`UPDATE ${table.sql} SET doc = jsonb(?), arrays = ?${sets} WHERE id = ?`)
        .run(stored.json, mayHoldArrays(stored.json), ...values, stored.doc._id);
    } catch (err) {
      throw duplicateKey(table.name, err) ?? err;
    }
  }

  #delete(table: Table, docs: Doc[]): number {
    const statement = this.#db.statement(`DELETE FROM ${table.sql} WHERE id = ?`);
    for (const doc of docs) statement.run(doc._id);
    return docs.length;
  }
}

type SelectedRow = Row & Record<string, string | null>;

/** What decides the rows of one query: its filter, the fields it reads, and mingo's test once made. */
interface RowDecider {
  filter: Filter;
  fields: string[] | undefined;
  test?: (doc: Doc) => boolean;
}

/**
 * The document a selected row answers with, or undefined when mingo says it does not match. (A
 * function of the module, not a closure per query: under tsx each closure made costs a
 * defineProperty of its name, which the bench:track profile showed.)
 */
function decideRow(row: SelectedRow, decider: RowDecider): Doc | undefined {
  const { fields } = decider;
  if (row.sure === 1 && fields) return projectedRow(row, fields);
  const doc = JSON.parse(row.doc!) as Doc;
  if (row.sure !== 1 && !(decider.test ??= matcher(decider.filter))(doc)) return undefined;
  return fields ? project(doc, fields) : doc;
}

/**
 * Whether `filter` names a value for every field of some unique index of top-level fields:
 * compileSql turns each into an exact index term, so SQLite finds one candidate row at most.
 */
function isPointLookup(table: Table, filter: Filter): boolean {
  return table.unique.some((fields) => fields.every((field) => isIndexValue(filter[field])));
}

type UpdateOutcome =
  | { kind: 'none' }
  | { kind: 'updated'; before: Doc; after: Doc }
  | { kind: 'inserted'; before?: undefined; after: Doc };

/**
 * ORDER BY for a sort spec, in MongoDB's type order for scalars (null or missing, numbers,
 * strings, then objects, arrays and booleans), ties in insertion order; undefined for paths SQL
 * cannot name. An indexed field holds only null, numbers, strings and booleans (checkIndexedFields;
 * its column holds a boolean as a BLOB, which SQLite sorts after them), whose order SQLite's is, so
 * it is sorted by its column alone, as its index is (the index serves it).
 */
function orderBy(sort: FindOptions['sort'], indexed: ReadonlyMap<string, string>): string | undefined {
  const keys: string[] = [];
  for (const [field, direction] of Object.entries(sort ?? {})) {
    const dir = direction === -1 ? 'DESC' : 'ASC';
    if (field === '_id') {
      keys.push(`id ${dir}`);
      continue;
    }
    const column = indexed.get(field);
    if (column) {
      keys.push(`${column} ${dir}`);
      continue;
    }
    const value = plainPathParts(field) && fieldSql(field);
    if (!value) return undefined;
    const type = value.replace('json_extract', 'json_type');
    keys.push(
      `CASE ifnull(${type}, 'null') WHEN 'null' THEN 0 WHEN 'integer' THEN 1 WHEN 'real' THEN 1 WHEN 'text' THEN 2 WHEN 'object' THEN 3 WHEN 'array' THEN 4 ELSE 5 END ${dir}`,
      `${value} ${dir}`,
    );
  }
  // `_id` is unique: with it among the keys, a tie-break would only keep an index from serving the order.
  if (!Object.hasOwn(sort ?? {}, '_id')) keys.push('rowid');
  return keys.join(', ');
}

interface CountingGroup {
  /** The grouped path, and its SQL value. */
  field: string;
  value: string;
  /** Each output field and the constant it sums per document. */
  sums: [string, number][];
}

/** A `$group` stage that only counts by one plain field, or undefined. */
function countingGroup(stage: Record<string, unknown> | undefined): CountingGroup | undefined {
  if (!stage || Object.keys(stage).length !== 1 || !isPlainObject(stage.$group)) return undefined;
  const { _id: key, ...accumulators } = stage.$group;
  if (typeof key !== 'string' || !key.startsWith('$') || key.startsWith('$$')) return undefined;
  const field = key.slice(1);
  const value = plainPathParts(field) && fieldSql(field);
  if (!value) return undefined;
  const sums: [string, number][] = [];
  for (const [name, accumulator] of Object.entries(accumulators)) {
    if (name.startsWith('$') || name.includes('.')) return undefined;
    const each = isPlainObject(accumulator) && Object.keys(accumulator).length === 1 ? accumulator.$sum : undefined;
    if (typeof each !== 'number' || !Number.isFinite(each)) return undefined;
    sums.push([name, each]);
  }
  return { field, value, sums };
}

/** A scalar as json_extract gives it, with json_type's name for it, back in JavaScript. */
function sqlScalar(value: SqlValue, type: string): unknown {
  if (type === 'true') return true;
  if (type === 'false') return false;
  if (type === 'null') return null;
  return value;
}

/**
 * SQL true when a document holds an array on (or on the way to) a sort field other than `_id` and
 * the top-level indexed fields, which never hold one (checkIndexedFields). Without that exception
 * a page of events sorted by `createdAt` looked at every event of the project first.
 */
function arrayOnSortPath(sort: FindOptions['sort'], indexed: ReadonlyMap<string, string>): string | undefined {
  const tests = Object.keys(sort ?? {}).flatMap((field) => (field === '_id' || indexed.has(field) ? [] : arrayTests(field)));
  return tests.length ? `arrays AND (${tests.join(' OR ')})` : undefined;
}

/** SQL tests, one per step of a path, each true when the document holds an array there. */
function arrayTests(field: string): string[] {
  const parts = field.split('.');
  const tests: string[] = [];
  for (let i = 1; i <= parts.length; i++) {
    const value = fieldSql(parts.slice(0, i).join('.'));
    if (value) tests.push(`${value.replace('json_extract', 'json_type')} = 'array'`);
  }
  return tests;
}

/** The whole filter as mingo answers it, trying the compiled closures first. */
function matcher(filter: Filter): (doc: Doc) => boolean {
  const compiled = compileFilter(filter);
  let full: { test(doc: Doc): boolean } | undefined;
  const mingo = (doc: Doc) => (full ??= compileQuery(filter)).test(doc);
  if (!compiled) return mingo;
  return (doc) => {
    const answer = compiled(doc);
    return answer === UNDECIDED ? mingo(doc) : answer === 1;
  };
}

/** The query operators only: the default context copies ~200 operators into every Query. */
const QUERY_OPTIONS = {
  context: Context.init({
    query: Object.fromEntries(Object.entries(queryOperatorModule).filter(([name]) => name.startsWith('$'))) as NonNullable<
      Parameters<typeof Context.init>[0]
    >['query'],
  }),
};

/** mingo's query, with the expression operators only for a filter that uses `$expr`. */
function compileQuery(filter: Filter): { test(doc: Doc): boolean } {
  return mentionsExpr(filter) ? new FullQuery(filter) : new MingoQuery(filter, QUERY_OPTIONS);
}

function mentionsExpr(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(mentionsExpr);
  if (!value || typeof value !== 'object' || value instanceof RegExp) return false;
  for (const [key, inner] of Object.entries(value)) if (key === '$expr' || mentionsExpr(inner)) return true;
  return false;
}

/** 1 unless the JSON certainly holds no array (a "[" inside a string only costs the fast path). */
function mayHoldArrays(json: string): number {
  return json.includes('[') ? 1 : 0;
}

/** Refuses an array in an indexed field: the expression indexes hold one value per document. */
function checkIndexedFields(table: Table, doc: Doc): void {
  for (const parts of table.indexPaths.values()) {
    let value: unknown = doc;
    for (const part of parts) {
      if (value === null || typeof value !== 'object') break;
      if (Array.isArray(value)) break;
      value = (value as Record<string, unknown>)[part];
    }
    // Null, a number, a string or a boolean (or nothing): what a column and its order hold exactly.
    if (Array.isArray(value)) throw new Error(`${table.name}.${parts.join('.')} is indexed and cannot hold an array`);
    if (typeof value === 'object' && value !== null) {
      throw new Error(`${table.name}.${parts.join('.')} is indexed and holds only strings, numbers, booleans or null`);
    }
  }
}

/** `where` (a WHERE clause, or nothing) with one more term ANDed to it. */
const whereAnd = (where: string, term: string): string => (where ? `${where} AND ${term}` : `WHERE ${term}`);

/** Names the column of an indexed path: `"$projectId"`, `"$profile.city"`. */
const COLUMN_PREFIX = '$';

/** What an undecided row adds to a count's sum (see countDocuments): more than any table's rows. */
const UNDECIDED_WEIGHT = 2n ** 32n;

function registerColumn(table: Table, field: string): string {
  const column = quote(`${COLUMN_PREFIX}${field}`);
  table.columns.set(field, column);
  table.indexPaths.set(field, field.split('.'));
  if (!field.includes('.')) table.indexed.set(field, column);
  table.insertSql = insertSql(table.sql, [...table.columns.values()]);
  return column;
}

/** The INSERT of a document with the columns of its indexed fields, in the order of `columns`. */
function insertSql(tableSql: string, columns: string[]): string {
  return `INSERT INTO ${tableSql} (id, doc, arrays${columns.map((column) => `, ${column}`).join('')}) VALUES (?, jsonb(?), ?${', ?'.repeat(columns.length)})`;
}

/**
 * A path's value as its column holds it: what `columnSql(path)` gives (null when missing; a
 * BOOLEAN_COLUMN for a boolean; JSON text for objects, which only documents from before the index
 * can hold, see checkIndexedFields).
 */
function columnValue(doc: Doc, parts: string[]): SqlValue {
  let value: unknown = doc;
  for (const part of parts) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
    value = (value as Record<string, unknown>)[part];
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'boolean') return BOOLEAN_COLUMN[`${value}`];
  if (value === null || value === undefined) return null;
  return JSON.stringify(value);
}

/** A DuplicateKeyError for SQLite's unique-constraint failure, or undefined for other errors. */
function duplicateKey(collection: string, err: unknown): DuplicateKeyError | undefined {
  const message = err instanceof Error ? err.message : '';
  if (!/UNIQUE constraint failed/.test(message)) return undefined;
  return new DuplicateKeyError(collection, message.replace(/^.*UNIQUE constraint failed: /, ''));
}

/**
 * The fields of an inclusion projection of top-level fields (`{_id: 1}`, `{email: 1, name: 1}`),
 * which the store applies itself; undefined for anything else.
 */
function inclusionFields(projection: Record<string, unknown>): string[] | undefined {
  const fields = Object.keys(projection);
  if (!fields.every((field) => projection[field] === 1 && !field.includes('.') && plainPathParts(field))) return undefined;
  return fields.sort();
}

/** The rows of a JSON list of ids (the one parameter). */
const WHERE_IDS = 'WHERE id IN (SELECT value FROM json_each(?))';
/** The same, in insertion order. */
const IN_ID_LIST = `${WHERE_IDS} ORDER BY rowid`;

/** Each of `fields` selected out of a row's document as JSON, `f0`, `f1`, …: what projectedRow reads. */
const fieldColumns = (fields: string[]) => fields.map((field, i) => `doc -> ${jsonPathLiteral(field)!} AS f${i}`).join(', ');

/** project() of a row that selected each of `fields` as JSON (`f0`, `f1`, ...; NULL when missing). */
function projectedRow(row: { id: string } & Record<string, unknown>, fields: string[]): Doc {
  const out: Record<string, unknown> = {};
  fields.forEach((field, i) => {
    if (field === '_id') out._id = row.id;
    else if (row[`f${i}`] !== null) out[field] = JSON.parse(row[`f${i}`] as string);
  });
  if (out._id === undefined) out._id = row.id;
  return out as Doc;
}

/** mingo's inclusion projection for top-level fields: the included fields in name order, then `_id`. */
function project(doc: Doc, fields: string[]): Doc {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const value = doc[field];
    if (value !== undefined) out[field] = value;
  }
  if (out._id === undefined) out._id = doc._id;
  return out as Doc;
}

function equalityId(condition: unknown): unknown {
  if (condition && typeof condition === 'object' && !Array.isArray(condition) && Object.keys(condition).length === 1 && '$eq' in condition) {
    return (condition as { $eq: unknown }).$eq;
  }
  return condition;
}

function requireId(doc: { _id?: unknown }): string {
  if (typeof doc._id !== 'string') throw new Error('every document needs a string _id');
  return doc._id;
}

function quote(identifier: string): string {
  return `"${identifier.replace(/"/g, '""')}"`;
}

const isPlainTopLevel = (key: string): boolean => !key.startsWith('$') && !key.includes('.');
