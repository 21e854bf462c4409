/**
 * The embedded DocumentStore: every collection lives in memory, MongoDB semantics come from mingo
 * (queries, update operators, aggregation, sort, projection), and every change is appended to a
 * journal (journal.ts) before the call resolves.
 *
 * Each method does all its reading and writing synchronously, with no await in between, so in
 * this single-threaded process read-modify-write operations (findOneAndUpdate, upserts, unique
 * checks) are atomic with respect to each other.
 *
 * Documents are stored as JSON round-trips of what the caller passed (so the stored value is
 * exactly what a reopen will replay) and handed out as clones; internal scans use the stored
 * objects directly.
 */
import { Query, aggregate as mingoAggregate, find as mingoFind } from 'mingo';
import { update as mingoUpdate } from 'mingo/updater';
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
import { Journal, deleteLine, putLine, type JournalEntry } from './journal.ts';
import { SecondaryIndex, equalityValue } from './store-index.ts';

export interface EmbeddedStoreOptions {
  /** Compact once the journal has more lines than max(compactAfter, 2 × live documents). */
  compactAfter?: number;
}

const DEFAULT_COMPACT_AFTER = 50_000;

/** Aggregation stages whose mingo implementation never modifies the documents fed to it. */
const READ_ONLY_STAGES = new Set(['$match', '$sort', '$skip', '$limit', '$count', '$group', '$project']);

/** One collection's data: the primary map (insertion order) and its secondary indexes. */
interface CollectionState {
  name: string;
  docs: Map<string, Doc>;
  indexes: SecondaryIndex[];
}

/** One document's change in a write: insert (no before), replace (both), or delete (no after). */
interface Change {
  id: string;
  before?: Doc;
  after?: Stored;
}

/** A document as stored, with its JSON (the journal line is built from it). */
interface Stored {
  doc: Doc;
  json: string;
}

export class EmbeddedStore implements DocumentStore {
  readonly #collections = new Map<string, CollectionState>();
  readonly #handles = new Map<string, EmbeddedCollection>();
  readonly #compactAfter: number;
  #journal: Journal | undefined;
  #retryCompactionAt = 0;

  private constructor(options: EmbeddedStoreOptions) {
    this.#compactAfter = options.compactAfter ?? DEFAULT_COMPACT_AFTER;
  }

  static async open(dir: string, options: EmbeddedStoreOptions = {}): Promise<EmbeddedStore> {
    const store = new EmbeddedStore(options);
    store.#journal = Journal.open(dir, (entry) => store.#replay(entry));
    store.#maybeCompact();
    return store;
  }

  collection<T extends Doc = Doc>(name: string): Collection<T> {
    let handle = this.#handles.get(name);
    if (!handle) this.#handles.set(name, (handle = new EmbeddedCollection(this, name)));
    return handle as unknown as Collection<T>;
  }

  async ensureIndexes(collection: string, indexes: IndexSpec[]): Promise<void> {
    this.#assertOpen();
    const state = this.state(collection);
    for (const spec of indexes) {
      const fields = Object.keys(spec.keys);
      const unique = spec.unique ?? false;
      const existing = state.indexes.find((index) => sameFields(index.fields, fields));
      if (existing && existing.unique === unique) continue;
      if (existing) throw new Error(`index on ${fields.join(',')} in ${collection} already exists with other options`);
      state.indexes.push(buildIndex(state, fields, unique));
    }
  }

  async close(): Promise<void> {
    this.#assertOpen();
    this.#journal!.close();
    this.#journal = undefined;
  }

  // ---- used by EmbeddedCollection ------------------------------------------------------------

  /** The state of a collection, created on first use (MongoDB creates collections implicitly). */
  state(name: string): CollectionState {
    this.#assertOpen();
    return this.#stateOf(name);
  }

  #stateOf(name: string): CollectionState {
    let state = this.#collections.get(name);
    if (!state) this.#collections.set(name, (state = { name, docs: new Map(), indexes: [] }));
    return state;
  }

  /**
   * Applies a write: checks `_id` and unique keys for every change first (a violation throws and
   * changes nothing), journals the changes, then updates memory and indexes.
   */
  commit(state: CollectionState, changes: Change[]): void {
    const conflict = findConflict(state, changes);
    if (conflict) throw new DuplicateKeyError(state.name, conflict.key);
    this.#write(state, changes);
  }

  /** Commits changes in order up to the first conflicting one, then throws (ordered insertMany). */
  commitPrefix(state: CollectionState, changes: Change[]): void {
    const conflict = findConflict(state, changes);
    this.#write(state, conflict ? changes.slice(0, conflict.at) : changes);
    if (conflict) throw new DuplicateKeyError(state.name, conflict.key);
  }

  // ---- internals ----------------------------------------------------------------------------

  #write(state: CollectionState, changes: Change[]): void {
    if (changes.length === 0) return;
    const text = changes
      .map((change) => (change.after ? putLine(state.name, change.after.json) : deleteLine(state.name, change.id)))
      .join('');
    // Journal first: if the disk write fails, memory still matches what a reopen would see.
    this.#journal!.append(text, changes.length);
    for (const change of changes) applyChange(state, change.id, change.before, change.after?.doc);
    this.#maybeCompact();
  }

  #replay(entry: JournalEntry): void {
    const state = this.#stateOf(entry.c);
    if ('p' in entry) applyChange(state, entry.p._id, state.docs.get(entry.p._id), entry.p);
    else applyChange(state, entry.d, state.docs.get(entry.d), undefined);
  }

  /** Rewrites the journal as a snapshot once it is mostly superseded lines. */
  #maybeCompact(): void {
    const journal = this.#journal!;
    let live = 0;
    for (const state of this.#collections.values()) live += state.docs.size;
    if (journal.lines <= Math.max(this.#compactAfter, 2 * live, this.#retryCompactionAt)) return;
    try {
      journal.compact(this.#snapshotLines());
    } catch {
      // The journal is untouched and the write that got us here is already durable, so failing
      // it would mislead the caller; try again once the journal has doubled.
      this.#retryCompactionAt = journal.lines * 2;
    }
  }

  *#snapshotLines(): Iterable<string> {
    for (const state of this.#collections.values()) {
      for (const doc of state.docs.values()) yield putLine(state.name, JSON.stringify(doc));
    }
  }

  #assertOpen(): void {
    if (!this.#journal) throw new Error('EmbeddedStore is closed');
  }
}

/** The Collection port over one collection of an EmbeddedStore. */
class EmbeddedCollection<T extends Doc = Doc> implements Collection<T> {
  readonly #store: EmbeddedStore;
  readonly #name: string;

  constructor(store: EmbeddedStore, name: string) {
    this.#store = store;
    this.#name = name;
  }

  get #state(): CollectionState {
    return this.#store.state(this.#name);
  }

  async insertOne(doc: T): Promise<void> {
    this.#store.commit(this.#state, [{ id: requireId(doc), after: toStored(doc) }]);
  }

  async insertMany(docs: T[]): Promise<void> {
    const changes = docs.map((doc) => ({ id: requireId(doc), after: toStored(doc) }));
    this.#store.commitPrefix(this.#state, changes);
  }

  async findOne(filter: Filter, options: FindOptions = {}): Promise<T | null> {
    return (await this.find(filter, { ...options, limit: 1 }))[0] ?? null;
  }

  async find(filter: Filter, options: FindOptions = {}): Promise<T[]> {
    const state = this.#state;
    const { sort, skip = 0, limit } = options;
    let docs: Doc[];
    if (sort && Object.keys(sort).length) {
      docs = sortDocs(matchAll(state, filter), sort);
      docs = docs.slice(skip, limit === undefined || limit === 0 ? undefined : skip + limit);
    } else {
      // Without a sort, stop scanning as soon as the page is full.
      docs = matchAll(state, filter, limit ? skip + limit : undefined).slice(skip);
    }
    if (options.projection && Object.keys(options.projection).length) {
      docs = mingoFind(docs, {}, options.projection).all() as Doc[];
    }
    return docs.map((doc) => structuredClone(doc) as T);
  }

  async countDocuments(filter: Filter): Promise<number> {
    const state = this.#state;
    if (Object.keys(filter).length === 0) return state.docs.size;
    return matchAll(state, filter).length;
  }

  async replaceOne(filter: Filter, doc: T, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    const state = this.#state;
    const [current] = matchAll(state, filter, 1);
    if (current) {
      if (doc._id !== undefined && doc._id !== current._id) throw new Error('replaceOne cannot change _id');
      const after = toStored({ ...doc, _id: current._id });
      if (after.json === JSON.stringify(current)) return { matched: 1, modified: 0 };
      this.#store.commit(state, [{ id: current._id, before: current, after }]);
      return { matched: 1, modified: 1 };
    }
    if (!options.upsert) return { matched: 0, modified: 0 };
    const id = doc._id ?? equalityValue(filter._id);
    const inserted = toStored({ ...doc, _id: requireId({ _id: id }) });
    this.#store.commit(state, [{ id: inserted.doc._id, after: inserted }]);
    return { matched: 0, modified: 0, upsertedId: inserted.doc._id };
  }

  async updateOne(filter: Filter, update: Update, options: { upsert?: boolean } = {}): Promise<UpdateResult> {
    const outcome = this.#updateFirst(filter, update, options.upsert ?? false);
    if (outcome.kind === 'none') return { matched: 0, modified: 0 };
    if (outcome.kind === 'inserted') return { matched: 0, modified: 0, upsertedId: outcome.after._id };
    return { matched: 1, modified: outcome.after === outcome.before ? 0 : 1 };
  }

  async updateMany(filter: Filter, update: Update): Promise<UpdateResult> {
    const state = this.#state;
    const matched = matchAll(state, filter);
    const changes: Change[] = [];
    for (const before of matched) {
      const after = applyUpdate(before, update, filter);
      if (after) changes.push({ id: before._id, before, after });
    }
    this.#store.commit(state, changes);
    return { matched: matched.length, modified: changes.length };
  }

  async findOneAndUpdate(
    filter: Filter,
    update: Update,
    options: { upsert?: boolean; returnDocument?: 'before' | 'after' } = {},
  ): Promise<T | null> {
    const outcome = this.#updateFirst(filter, update, options.upsert ?? false);
    if (outcome.kind === 'none') return null;
    const doc = options.returnDocument === 'before' ? outcome.before : outcome.after;
    return doc ? (structuredClone(doc) as T) : null;
  }

  async deleteOne(filter: Filter): Promise<number> {
    return this.#delete(matchAll(this.#state, filter, 1));
  }

  async deleteMany(filter: Filter): Promise<number> {
    return this.#delete(matchAll(this.#state, filter));
  }

  async aggregate<R = Doc>(pipeline: Record<string, unknown>[]): Promise<R[]> {
    const state = this.#state;
    // A leading $match can use the indexes; the rest runs in mingo over the stored objects.
    const [first, ...rest] = pipeline;
    const leadingMatch = first && Object.keys(first).length === 1 ? (first.$match as Filter | undefined) : undefined;
    let docs: unknown[] = leadingMatch ? matchAll(state, leadingMatch) : [...state.docs.values()];
    const stages = leadingMatch ? rest : pipeline;
    // Some mingo stages ($unwind, $addFields, ...) write into their input documents, so the
    // stored objects are cloned right before the first stage not known to leave them alone.
    const cut = stages.findIndex((stage) => !Object.keys(stage).every((op) => READ_ONLY_STAGES.has(op)));
    const readOnly = cut === -1 ? stages : stages.slice(0, cut);
    if (readOnly.length) docs = mingoAggregate(docs, readOnly);
    if (cut !== -1) docs = mingoAggregate(docs.map((doc) => structuredClone(doc)), stages.slice(cut));
    return docs.map((doc) => structuredClone(doc) as R);
  }

  /** The shared core of updateOne and findOneAndUpdate: update the first match, or upsert. */
  #updateFirst(filter: Filter, update: Update, upsert: boolean): UpdateOutcome {
    const state = this.#state;
    const [before] = matchAll(state, filter, 1);
    if (before) {
      const after = applyUpdate(before, update, filter);
      if (!after) return { kind: 'updated', before, after: before };
      this.#store.commit(state, [{ id: before._id, before, after }]);
      return { kind: 'updated', before, after: after.doc };
    }
    if (!upsert) return { kind: 'none' };
    const inserted = buildUpsert(filter, update);
    this.#store.commit(state, [{ id: inserted.doc._id, after: inserted }]);
    return { kind: 'inserted', after: inserted.doc };
  }

  #delete(docs: Doc[]): number {
    this.#store.commit(
      this.#state,
      docs.map((doc) => ({ id: doc._id, before: doc })),
    );
    return docs.length;
  }
}

type UpdateOutcome =
  | { kind: 'none' }
  | { kind: 'updated'; before: Doc; after: Doc }
  | { kind: 'inserted'; before?: undefined; after: Doc };

// ---- query planning and matching ---------------------------------------------------------------

/**
 * The stored documents matching `filter`, at most `limit` of them. Candidates come from the `_id`
 * map or a secondary index when the filter pins all of its fields to scalars, else from a scan in
 * insertion order; mingo tests every candidate.
 */
function matchAll(state: CollectionState, filter: Filter, limit?: number): Doc[] {
  const query = new Query(filter);
  const ids = plannedIds(state, filter);
  // The scan iterates the Map directly: a generator in between costs ~20% on big scans.
  const candidates = ids ? lookUp(state, ids) : state.docs.values();
  const out: Doc[] = [];
  for (const doc of candidates) {
    if (!query.test(doc)) continue;
    out.push(doc);
    if (limit !== undefined && out.length >= limit) break;
  }
  return out;
}

function* lookUp(state: CollectionState, ids: Iterable<string>): Iterable<Doc> {
  for (const id of ids) {
    const doc = state.docs.get(id);
    if (doc) yield doc;
  }
}

/** The ids the best usable index offers for `filter`, or undefined when a scan is needed. */
function plannedIds(state: CollectionState, filter: Filter): Iterable<string> | undefined {
  const id = equalityValue(filter._id);
  if (typeof id === 'string') return [id];
  const inIds = idsFromIn(filter._id);
  if (inIds) return inIds;
  let best: { index: SecondaryIndex; key: string; count: number } | undefined;
  for (const index of state.indexes) {
    const key = index.lookupKey(filter);
    if (key === undefined) continue;
    const count = index.count(key);
    if (!best || count < best.count) best = { index, key, count };
  }
  return best?.index.ids(best.key);
}

/** `_id: {$in: [...strings]}`, in `_id` order like MongoDB's index scan. */
function idsFromIn(condition: unknown): string[] | undefined {
  if (!condition || typeof condition !== 'object' || Array.isArray(condition)) return undefined;
  const keys = Object.keys(condition);
  const list = (condition as { $in?: unknown }).$in;
  if (keys.length !== 1 || !Array.isArray(list)) return undefined;
  if (!list.every((value) => typeof value === 'string' || typeof value === 'number')) return undefined;
  return [...new Set(list.filter((value): value is string => typeof value === 'string'))].sort();
}

function sortDocs(docs: Doc[], sort: Record<string, 1 | -1>): Doc[] {
  // mingo's $sort uses MongoDB's cross-type order and is stable.
  return mingoAggregate(docs, [{ $sort: sort }]) as Doc[];
}

// ---- writes ------------------------------------------------------------------------------------

/** The first change that would duplicate an `_id` or a unique index key, if any. */
function findConflict(state: CollectionState, changes: Change[]): { at: number; key: string } | undefined {
  // Documents this write moves or deletes may give up their keys; inserted ones hold none yet.
  const changing = new Set(changes.filter((change) => change.before).map((change) => change.id));
  const newIds = new Set<string>();
  const claimed = state.indexes.filter((index) => index.unique).map((index) => ({ index, keys: new Map<string, string>() }));
  for (const [at, change] of changes.entries()) {
    const after = change.after?.doc;
    if (!after) continue;
    if (!change.before) {
      // An insert: the id must be new to the collection (unless this batch deletes it) and batch.
      const taken = (state.docs.has(change.id) && !isDeletedIn(changes, change.id)) || newIds.has(change.id);
      if (taken) return { at, key: `_id: ${JSON.stringify(change.id)}` };
      newIds.add(change.id);
    }
    for (const { index, keys } of claimed) {
      for (const key of index.keysOf(after)) {
        let heldElsewhere = false;
        for (const owner of index.ids(key)) heldElsewhere ||= owner !== change.id && !changing.has(owner);
        const claimedInBatch = keys.has(key) && keys.get(key) !== change.id;
        if (heldElsewhere || claimedInBatch) return { at, key: describeKey(index, key) };
        keys.set(key, change.id);
      }
    }
  }
  return undefined;
}

function isDeletedIn(changes: Change[], id: string): boolean {
  return changes.some((change) => change.id === id && change.before && !change.after);
}

function describeKey(index: SecondaryIndex, key: string): string {
  const values = JSON.parse(key) as unknown[];
  return index.fields.map((field, i) => `${field}: ${JSON.stringify(values[i])}`).join(', ');
}

/** Moves one document from `before` to `after` in the primary map and every index. */
function applyChange(state: CollectionState, id: string, before: Doc | undefined, after: Doc | undefined): void {
  for (const index of state.indexes) {
    const oldKeys = before ? index.keysOf(before) : [];
    const newKeys = after ? index.keysOf(after) : [];
    if (oldKeys.length === newKeys.length && oldKeys.every((key, i) => key === newKeys[i])) continue;
    index.remove(id, oldKeys);
    index.add(id, newKeys);
  }
  if (after) state.docs.set(id, after);
  else state.docs.delete(id);
}

function buildIndex(state: CollectionState, fields: string[], unique: boolean): SecondaryIndex {
  const index = new SecondaryIndex(fields, unique);
  for (const doc of state.docs.values()) {
    const keys = index.keysOf(doc);
    if (unique) {
      const taken = keys.find((key) => index.count(key) > 0);
      if (taken !== undefined) throw new DuplicateKeyError(state.name, describeKey(index, taken));
    }
    index.add(doc._id, keys);
  }
  return index;
}

/**
 * Applies update operators to a copy of `doc`; undefined when nothing changed. `$setOnInsert`
 * only acts on upserts.
 */
function applyUpdate(doc: Doc, update: Update, filter: Filter): Stored | undefined {
  const { $setOnInsert: _ignored, ...operators } = assertOperators(update);
  if (Object.keys(operators).length === 0) return undefined;
  const working = structuredClone(doc);
  // Only the positional `$` needs the filter, and handing it over costs mingo another compile.
  const positional = Object.values(operators).some((fields) => Object.keys(fields as object).some((f) => f.includes('.$')));
  const changed = mingoUpdate(working, operators, undefined, positional ? filter : undefined, { cloneMode: 'none' });
  return changed.length ? toStored(working) : undefined;
}

/**
 * The document an upsert inserts, as MongoDB builds it: the filter's equality fields, then the
 * update operators, then `$setOnInsert`. It must end up with a string `_id` (our rule).
 */
function buildUpsert(filter: Filter, update: Update): Stored {
  const { $setOnInsert, ...operators } = assertOperators(update);
  // mingo refuses to touch `_id` (it is immutable on updates), so it is placed first, by hand.
  const { _id: filterId, ...equalities } = equalityFields(filter);
  const { _id: insertId, ...onInsert } = ($setOnInsert ?? {}) as Record<string, unknown>;
  const id = insertId ?? filterId;
  if (typeof id !== 'string') throw new Error('upsert needs a string _id in the filter or in $setOnInsert');
  const doc: Doc = { _id: id };
  if (Object.keys(equalities).length) mingoUpdate(doc, { $set: equalities }, undefined, undefined, { cloneMode: 'none' });
  if (Object.keys(operators).length) mingoUpdate(doc, operators, undefined, undefined, { cloneMode: 'none' });
  if (Object.keys(onInsert).length) mingoUpdate(doc, { $set: onInsert }, undefined, undefined, { cloneMode: 'none' });
  return toStored(doc);
}

/** The `field: value` and `field: {$eq: value}` conditions of a filter, including inside `$and`. */
function equalityFields(filter: Filter): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) {
      for (const clause of value) Object.assign(fields, equalityFields(clause as Filter));
    } else if (!key.startsWith('$') && !(value instanceof RegExp)) {
      if (!isOperatorObject(value)) fields[key] = value;
      else if (Object.keys(value).length === 1 && '$eq' in value) fields[key] = value.$eq;
    }
  }
  return fields;
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => key.startsWith('$'));
}

function assertOperators(update: Update): Update {
  const keys = Object.keys(update);
  if (keys.length === 0 || !keys.every((key) => key.startsWith('$'))) {
    throw new Error('update document must contain only update operators ($set, $inc, ...)');
  }
  return update;
}

/** The stored form of a caller's document: a JSON round trip, i.e. exactly what replay yields. */
function toStored(doc: Doc): Stored {
  const json = JSON.stringify(doc);
  return { doc: JSON.parse(json) as Doc, json };
}

function requireId(doc: { _id?: unknown }): string {
  if (typeof doc._id !== 'string') throw new Error('every document needs a string _id');
  return doc._id;
}

function sameFields(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((field, i) => field === b[i]);
}
