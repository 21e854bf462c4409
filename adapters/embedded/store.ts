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
 * exactly what a reopen will replay) and handed out as copies; internal scans use the stored
 * objects directly. Stored objects are never modified in place (an update builds a new version,
 * which may share untouched subtrees with the old one), so they can be read without copying.
 *
 * Hot paths skip mingo where its answer is known without it, and must return exactly what mingo
 * would (test/unit/embedded-store.test.ts compares them): plain equality on scalars (answered by
 * an exact index or `_id`, or tested by walking the path, with mingo deciding any document that
 * has an array on the way), `$set`/`$unset`/`$inc`/`$min`/`$max` on plain object paths, inclusion
 * projections of top-level fields, sort + limit over strings, numbers and null/missing
 * (bounded top-k instead of a full sort), and the other conditions of a filter through compiled
 * closures (store-match.ts) that leave to mingo each document they cannot decide (an array on a
 * path, a comparison across types). Anything else goes to mingo as before.
 */
import { Context, Query as FullQuery, aggregate as mingoAggregate, find as mingoFind } from 'mingo';
import * as queryOperatorModule from 'mingo/operators/query';
import { Query as MingoQuery } from 'mingo/query';
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
import { copyJson } from './json.ts';
import { Journal, deleteLine, putLine, type JournalEntry } from './journal.ts';
import { SecondaryIndex, equalityValue, exactEqualityValue } from './store-index.ts';
import { UNDECIDED, compileFilter } from './store-match.ts';

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
  /** Bumped by every change: what was counted at one version holds until the next. */
  version: number;
  /**
   * The number of matches of the last filter a full scan counted (a sorted page scans every
   * match; a count does), so the total asked for next to a page costs no second scan.
   */
  lastCount?: { version: number; key: string; count: number };
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
    if (!state) this.#collections.set(name, (state = { name, docs: new Map(), indexes: [], version: 0 }));
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
    let docs: Doc[] | undefined;
    if (sort && Object.keys(sort).length) {
      // A page of a sorted list keeps only the best skip + limit matches while scanning.
      if (isCount(skip) && isCount(limit) && limit > 0) docs = topMatches(state, filter, sort, skip + limit)?.slice(skip);
      if (!docs) {
        docs = sortDocs(matchAll(state, filter), sort);
        docs = docs.slice(skip, limit === undefined || limit === 0 ? undefined : skip + limit);
      }
    } else {
      // Without a sort, stop scanning as soon as the page is full.
      docs = matchAll(state, filter, limit ? skip + limit : undefined).slice(skip);
    }
    if (options.projection && Object.keys(options.projection).length) {
      const fields = inclusionFields(options.projection);
      // Both build new objects, but mingo's share values with the stored documents: copy after.
      if (fields) return docs.map((doc) => project(doc, fields) as T);
      docs = mingoFind(docs, {}, options.projection).all() as Doc[];
    }
    return docs.map((doc) => copyJson(doc) as T);
  }

  async countDocuments(filter: Filter): Promise<number> {
    const state = this.#state;
    if (Object.keys(filter).length === 0) return state.docs.size;
    const plan = planQuery(state, filter);
    if (plan.count !== undefined) return plan.count;
    const key = countKey(filter);
    const known = state.lastCount;
    if (key !== undefined && known && known.version === state.version && known.key === key) return known.count;
    let count = 0;
    scan(state, plan, () => {
      count++;
      return true;
    });
    if (key !== undefined) state.lastCount = { version: state.version, key, count };
    return count;
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
    return doc ? (copyJson(doc) as T) : null;
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
 * The stored documents matching `filter`, at most `limit` of them, in the order of the
 * candidates (see planQuery).
 */
function matchAll(state: CollectionState, filter: Filter, limit?: number): Doc[] {
  const out: Doc[] = [];
  scan(state, planQuery(state, filter), (doc) => {
    out.push(doc);
    return limit === undefined || out.length < limit;
  });
  return out;
}

/** A top-level `field: value` or `field: {$eq: value}` the store tests itself (see testEquality). */
interface Equality {
  field: string;
  parts: string[];
  value: string | number | boolean;
}

/** How to answer a filter: where the candidates come from and what is left to test on them. */
interface QueryPlan {
  filter: Filter;
  /** The candidates in lookup order (stored documents), or undefined for a scan in insertion order. */
  candidates: Iterable<Doc> | undefined;
  /** Conditions the candidates do not satisfy by construction, tested by walking their paths. */
  equalities: Equality[];
  /** The remaining conditions, compiled by mingo; undefined when there are none. */
  rest: Matcher | undefined;
  /** The number of matches when the candidates need no test at all. */
  count: number | undefined;
  /** mingo's query for the whole filter, compiled when a document first needs it. */
  full?: Matcher;
}

interface Matcher {
  test(doc: Doc): boolean;
}

/**
 * Plans `filter`. Candidates come from the `_id` map, `_id: {$in}`, or the secondary index with
 * the fewest holders among those the filter pins completely, else from a scan. Conditions the
 * candidates meet by construction (the `_id` looked up; the fields of an exact index) are not
 * tested again; plain scalar equalities are tested by the store; mingo tests only the rest, and
 * decides the equalities for a document that has an array on the way.
 */
function planQuery(state: CollectionState, filter: Filter): QueryPlan {
  const fields = Object.keys(filter);
  if (fields.length === 1 && fields[0] === '_id' && typeof filter._id === 'string') {
    // The commonest query, `{_id: 'x'}`, short of the general planning below.
    const doc = state.docs.get(filter._id);
    return { filter, candidates: doc ? [doc] : [], equalities: [], rest: undefined, count: doc ? 1 : 0 };
  }
  const equalities: Equality[] = [];
  let rest: Filter | undefined;
  for (const field of fields) {
    const parts = plainPathParts(field);
    const value = parts && exactEqualityValue(filter[field]);
    if (value !== undefined) equalities.push({ field, parts: parts!, value });
    // defineProperty: a `__proto__` key must stay a key, for mingo to refuse it as before.
    else Object.defineProperty((rest ??= {}), field, { value: filter[field], enumerable: true, configurable: true, writable: true });
  }

  let candidates: Iterable<Doc> | undefined;
  let count: number | undefined;
  let covered: string[] = [];
  const id = equalityValue(filter._id);
  const inIds = id === undefined ? idsFromIn(filter._id) : undefined;
  if (typeof id === 'string') {
    const doc = state.docs.get(id);
    candidates = doc ? [doc] : [];
    count = doc ? 1 : 0;
    covered = ['_id'];
  } else if (id !== undefined) {
    // Every stored `_id` is a string, and no string equals a number or a boolean.
    candidates = [];
    count = 0;
  } else if (inIds) {
    // A stored document's `_id` is in the list exactly when the document is looked up.
    const docs = inIds.map((one) => state.docs.get(one)).filter((doc) => doc !== undefined);
    candidates = docs;
    count = docs.length;
    covered = ['_id'];
  } else {
    let best: { index: SecondaryIndex; key: string; count: number } | undefined;
    for (const index of state.indexes) {
      const key = index.lookupKey(filter);
      if (key === undefined) continue;
      const holders = index.count(key);
      if (!best || holders < best.count) best = { index, key, count: holders };
    }
    if (best) {
      candidates = best.index.docs(best.key);
      count = best.count;
      // Exactness needs every field's condition to be one the index compares exactly.
      const exact = best.index.exact && best.index.fields.every((field) => equalities.some((eq) => eq.field === field));
      if (exact) covered = best.index.fields;
    }
  }

  const remaining = equalities.filter((eq) => !covered.includes(eq.field));
  if (rest && covered.includes('_id')) delete rest._id;
  if (rest && Object.keys(rest).length === 0) rest = undefined;
  const needsTests = remaining.length > 0 || rest !== undefined || candidates === undefined;
  return { filter, candidates, equalities: remaining, rest: rest && compileRest(rest), count: needsTests ? undefined : count };
}

/**
 * Hands every matching stored document to `visit`, in candidate order, until `visit` returns
 * false.
 */
function scan(state: CollectionState, plan: QueryPlan, visit: (doc: Doc) => boolean): void {
  const test = plan.equalities.length > 0 || plan.rest !== undefined;
  // Iterate the Map (or bucket) directly: a generator in between costs ~20% on big scans.
  for (const doc of plan.candidates ?? state.docs.values()) {
    if ((!test || matches(plan, doc)) && !visit(doc)) return;
  }
}

/** Whether a candidate of `plan` matches its filter. */
function matches(plan: QueryPlan, doc: Doc): boolean {
  let undecided = false;
  for (const equality of plan.equalities) {
    const result = testEquality(doc, equality);
    if (result === false) return false;
    if (result === undefined) undecided = true;
  }
  if (undecided) return (plan.full ??= compileQuery(plan.filter)).test(doc);
  return plan.rest === undefined || plan.rest.test(doc);
}

/**
 * mingo's answer to a plain equality, when it can be known without mingo: with no array on the
 * path, `{a.b: v}` (v a string, boolean or finite number) matches exactly when the value there
 * is `=== v`; a missing field or a non-object on the way resolves to undefined, which never
 * equals v. An array on the way (or at the end) needs mingo's array rules: undefined.
 */
function testEquality(doc: Doc, equality: Equality): boolean | undefined {
  let value: unknown = doc;
  for (const part of equality.parts) {
    if (value === null || typeof value !== 'object') return false;
    if (Array.isArray(value)) return undefined;
    // isPlainPath keeps Object.prototype's names out, so this reads own properties only.
    value = (value as Record<string, unknown>)[part];
  }
  if (Array.isArray(value)) return undefined;
  return value === equality.value;
}

/**
 * A dotted field path the store walks itself: no `$` (operators, positional), no empty part,
 * and no name Object.prototype has (mingo refuses `__proto__` and skips inherited names).
 */
function isPlainPath(path: string): boolean {
  return plainPathParts(path) !== undefined;
}

/** The parts of a plain path (see isPlainPath), or undefined. */
function plainPathParts(path: string): string[] | undefined {
  if (path.length === 0 || path.includes('$')) return undefined;
  const parts = path.split('.');
  for (const part of parts) {
    if (part.length === 0 || part in Object.prototype) return undefined;
  }
  return parts;
}

/** Whether one path is the other or lies inside it (`a` and `a.b`, not `a` and `ab`). */
function overlaps(a: string, b: string): boolean {
  if (a.length > b.length) return overlaps(b, a);
  return b.startsWith(a) && (b.length === a.length || b[a.length] === '.');
}

/** The query operators only: the default context copies ~200 operators into every Query. */
const QUERY_OPTIONS = {
  context: Context.init({
    query: Object.fromEntries(Object.entries(queryOperatorModule).filter(([name]) => name.startsWith('$'))) as NonNullable<
      Parameters<typeof Context.init>[0]
    >['query'],
  }),
};

/**
 * A compiled mingo query. mingo copies its operator tables into every Query whatever options
 * it gets (a context passed in is copied too), so the copy is made small instead: query
 * operators only, unless the filter uses `$expr`, which needs the expression operators.
 */
function compileQuery(filter: Filter): Matcher {
  return mentionsExpr(filter) ? new FullQuery(filter) : new MingoQuery(filter, QUERY_OPTIONS);
}

/**
 * The conditions left after planning: a compiled closure (store-match.ts) where the filter stays
 * within its operators, asking mingo only about the documents it cannot decide; else mingo.
 */
function compileRest(filter: Filter): Matcher {
  const compiled = compileFilter(filter);
  if (!compiled) return compileQuery(filter);
  let full: Matcher | undefined;
  return {
    test(doc) {
      const answer = compiled(doc);
      return answer === UNDECIDED ? (full ??= compileQuery(filter)).test(doc) : answer === 1;
    },
  };
}

function mentionsExpr(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(mentionsExpr);
  if (!value || typeof value !== 'object' || value instanceof RegExp) return false;
  for (const [key, inner] of Object.entries(value)) if (key === '$expr' || mentionsExpr(inner)) return true;
  return false;
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

function isCount(value: number | undefined): value is number {
  return Number.isSafeInteger(value) && value! >= 0;
}

/** A sort key of a document the top-k selection can order: null stands for null and missing. */
type SortValue = string | number | null;
const UNSORTABLE = Symbol('unsortable');

interface Ranked {
  doc: Doc;
  values: SortValue[];
  seq: number;
}

/**
 * The first `k` matches in `sort` order, as mingo's stable $sort then a slice would give them,
 * while keeping only k of them at a time (a bounded max-heap). mingo groups null with missing
 * and orders them first, then numbers, then strings (by UTF-16 code units), with ties in match
 * order; any other value (boolean, object, array, or an array on the way) makes this give up
 * (undefined) and the caller sorts every match with mingo.
 */
function topMatches(state: CollectionState, filter: Filter, sort: Record<string, 1 | -1>, k: number): Doc[] | undefined {
  const fields = Object.keys(sort);
  if (!fields.every((field) => isPlainPath(field) && (sort[field] === 1 || sort[field] === -1))) return undefined;
  const paths = fields.map((field) => field.split('.'));
  const directions = fields.map((field) => sort[field]);

  const order = (a: Ranked, b: Ranked): number => {
    for (let i = 0; i < paths.length; i++) {
      const c = compareSortValues(a.values[i], b.values[i]);
      if (c !== 0) return c * directions[i];
    }
    return a.seq - b.seq;
  };
  const heap: Ranked[] = []; // heap[0] is the last of the k best so far
  const probe: Ranked = { doc: undefined as unknown as Doc, values: new Array<SortValue>(paths.length), seq: 0 };
  let seq = 0;
  let unsortable = false;
  scan(state, planQuery(state, filter), (doc) => {
    for (let i = 0; i < paths.length; i++) {
      const value = sortValue(doc, paths[i]);
      if (value === UNSORTABLE) {
        unsortable = true;
        return false;
      }
      probe.values[i] = value;
    }
    probe.seq = seq++;
    if (heap.length === k && order(probe, heap[0]) >= 0) return true;
    const entry: Ranked = { doc, values: probe.values.slice(), seq: probe.seq };
    if (heap.length < k) siftUp(heap, entry, order);
    else siftDown(heap, entry, order);
    return true;
  });
  if (unsortable) return undefined;
  // Every match was visited: remember how many, for the count that usually comes with a page.
  const key = countKey(filter);
  if (key !== undefined) state.lastCount = { version: state.version, key, count: seq };
  return heap.sort(order).map((entry) => entry.doc);
}

/** A filter's key for lastCount, or undefined unless JSON tells it apart from every other filter. */
function countKey(filter: Filter): string | undefined {
  return isJsonOnly(filter) ? JSON.stringify(filter) : undefined;
}

/** Strings, finite numbers, booleans, null, arrays and plain objects of them (no RegExp, Date, undefined). */
function isJsonOnly(value: unknown): boolean {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(value);
    case 'object':
      if (value === null) return true;
      if (Array.isArray(value)) return value.every(isJsonOnly);
      return isPlainObject(value) && Object.keys(value).every((key) => key !== '__proto__' && isJsonOnly(value[key]));
    default:
      return false;
  }
}

function sortValue(doc: Doc, parts: string[]): SortValue | typeof UNSORTABLE {
  let value: unknown = doc;
  for (const part of parts) {
    if (value === null || typeof value !== 'object') return null;
    if (Array.isArray(value)) return UNSORTABLE;
    value = (value as Record<string, unknown>)[part];
  }
  if (value === undefined || value === null) return null;
  return typeof value === 'string' || typeof value === 'number' ? value : UNSORTABLE;
}

/** mingo's order on null/missing, numbers and strings: by type in that order, then by value. */
function compareSortValues(a: SortValue, b: SortValue): number {
  const typeOrder = sortTypeRank(a) - sortTypeRank(b);
  if (typeOrder !== 0) return typeOrder;
  return a! < b! ? -1 : a! > b! ? 1 : 0;
}

function sortTypeRank(value: SortValue): number {
  return value === null ? 0 : typeof value === 'number' ? 1 : 2;
}

/** Adds `entry` to the max-heap. */
function siftUp(heap: Ranked[], entry: Ranked, order: (a: Ranked, b: Ranked) => number): void {
  let i = heap.length;
  heap.push(entry);
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (order(heap[parent], entry) >= 0) break;
    heap[i] = heap[parent];
    i = parent;
  }
  heap[i] = entry;
}

/** Replaces the max-heap's root (its greatest entry) by `entry`. */
function siftDown(heap: Ranked[], entry: Ranked, order: (a: Ranked, b: Ranked) => number): void {
  let i = 0;
  for (;;) {
    let child = 2 * i + 1;
    if (child >= heap.length) break;
    if (child + 1 < heap.length && order(heap[child + 1], heap[child]) > 0) child++;
    if (order(heap[child], entry) <= 0) break;
    heap[i] = heap[child];
    i = child;
  }
  heap[i] = entry;
}

/**
 * The sorted field names of an inclusion projection of top-level fields (`{_id: 1}`,
 * `{email: 1, name: 1}`), which the store applies itself; undefined for anything else.
 */
function inclusionFields(projection: Record<string, unknown>): string[] | undefined {
  const fields = Object.keys(projection);
  if (!fields.every((field) => projection[field] === 1 && !field.includes('.') && isPlainPath(field))) return undefined;
  return fields.sort();
}

/**
 * mingo's inclusion projection for top-level fields: the included fields the document has, in
 * sorted name order, then `_id` unless it was among them. Values are copied.
 */
function project(doc: Doc, fields: string[]): Doc {
  const out: Record<string, unknown> = {};
  for (const field of fields) {
    const value = doc[field];
    if (value !== undefined) out[field] = copyJson(value);
  }
  if (out._id === undefined) out._id = doc._id;
  return out as Doc;
}

// ---- writes ------------------------------------------------------------------------------------

/** The first change that would duplicate an `_id` or a unique index key, if any. */
function findConflict(state: CollectionState, changes: Change[]): { at: number; key: string } | undefined {
  if (changes.length === 1) return findConflictOfOne(state, changes[0]);
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
        for (const { _id: owner } of index.docs(key)) heldElsewhere ||= owner !== change.id && !changing.has(owner);
        const claimedInBatch = keys.has(key) && keys.get(key) !== change.id;
        if (heldElsewhere || claimedInBatch) return { at, key: describeKey(index, key) };
        keys.set(key, change.id);
      }
    }
  }
  return undefined;
}

/** findConflict for a write of one document: no batch to check against, no Sets to build. */
function findConflictOfOne(state: CollectionState, change: Change): { at: number; key: string } | undefined {
  const after = change.after?.doc;
  if (!after) return undefined;
  if (!change.before && state.docs.has(change.id)) return { at: 0, key: `_id: ${JSON.stringify(change.id)}` };
  for (const index of state.indexes) {
    if (!index.unique) continue;
    for (const key of index.keysOf(after)) {
      for (const { _id: owner } of index.docs(key)) if (owner !== change.id) return { at: 0, key: describeKey(index, key) };
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
  state.version++;
  for (const index of state.indexes) index.move(id, before, after);
  if (after) state.docs.set(id, after);
  else state.docs.delete(id);
}

function buildIndex(state: CollectionState, fields: string[], unique: boolean): SecondaryIndex {
  const index = new SecondaryIndex(fields, unique);
  for (const doc of state.docs.values()) {
    const entry = index.entryOf(doc);
    if (unique) {
      const taken = entry.keys.find((key) => index.count(key) > 0);
      if (taken !== undefined) throw new DuplicateKeyError(state.name, describeKey(index, taken));
    }
    index.insert(doc, entry);
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
  const fast = simpleUpdate(doc, operators);
  if (fast !== FALL_BACK) return fast && { doc: fast, json: JSON.stringify(fast) };
  const working = copyJson(doc);
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

// ---- updates without mingo ---------------------------------------------------------------------

const FALL_BACK = Symbol('fall back to mingo');
const SIMPLE_OPERATORS = new Set(['$set', '$unset', '$inc', '$min', '$max']);

/**
 * `$set`, `$unset`, `$inc`, `$min` and `$max` applied as mingo's updater applies them, for the
 * cases where that is plain: every path is a plain dotted path (not `_id`, no two overlapping),
 * every object on the way is a plain object or missing (created, as mingo does), `$set` values
 * are JSON values, `$inc` adds a finite number to a number or to nothing, and `$min`/`$max`
 * compare a string with a string or a number with a number (or find nothing). Returns the new
 * version of the document, already a JSON round trip (copies only the objects on the changed
 * paths; the rest is shared with `doc`), undefined when nothing changed (mingo's "no modified
 * field"), or FALL_BACK for anything else, which mingo then does as before (including throwing).
 */
function simpleUpdate(doc: Doc, operators: Update): Doc | undefined | typeof FALL_BACK {
  // In mingo's order: operator by operator, field by field.
  const steps: { operator: string; path: string; parts: string[]; operand: unknown }[] = [];
  for (const operator of Object.keys(operators)) {
    const fields = operators[operator];
    if (!SIMPLE_OPERATORS.has(operator) || !isPlainObject(fields)) return FALL_BACK;
    for (const path of Object.keys(fields)) {
      const parts = plainPathParts(path);
      if (!parts || parts[0] === '_id') return FALL_BACK;
      // mingo refuses two paths where one is, or contains, the other.
      for (const step of steps) if (overlaps(step.path, path)) return FALL_BACK;
      steps.push({ operator, path, parts, operand: fields[path] });
    }
  }

  // mingo's updater acts only inside what its typeOf calls an object, which an own `constructor`
  // key can change: leave such documents to mingo.
  if (Object.hasOwn(doc, 'constructor')) return FALL_BACK;
  const root: Record<string, unknown> = { ...doc };
  const fresh = new Set<object>([root]);
  let changed = false;
  for (const { operator, parts, operand } of steps) {
    const last = parts.length - 1;
    const leaf = parts[last];
    // Find (or, except for $unset, create) the parent object, copying the stored ones on the way.
    let parent: Record<string, unknown> | undefined = root;
    for (let i = 0; i < last; i++) {
      const part = parts[i];
      let child = parent[part];
      if (child === undefined) {
        if (operator === '$unset') {
          parent = undefined;
          break;
        }
        child = {};
      } else if (!isPlainObject(child) || Object.hasOwn(child, 'constructor')) {
        return FALL_BACK; // an array, null or a scalar on the way: mingo's rules
      } else if (!fresh.has(child)) {
        child = { ...child };
      }
      fresh.add(child as object);
      parent[part] = child;
      parent = child as Record<string, unknown>;
    }
    if (!parent) continue;
    const current = parent[leaf];
    let next: unknown;
    switch (operator) {
      case '$set': {
        const value = jsonCopy(operand);
        if (value === FALL_BACK) return FALL_BACK;
        if (jsonEqual(current, value)) continue;
        next = value;
        break;
      }
      case '$unset':
        if (current === undefined) continue;
        delete parent[leaf];
        changed = true;
        continue;
      case '$inc': {
        if (typeof operand !== 'number' || !Number.isFinite(operand)) return FALL_BACK;
        if (current !== undefined && typeof current !== 'number') return FALL_BACK;
        next = ((current as number | undefined) || 0) + operand;
        if (!Number.isFinite(next)) return FALL_BACK;
        if (next === current) continue;
        break;
      }
      case '$min':
      case '$max': {
        if (!(typeof operand === 'string' || (typeof operand === 'number' && Number.isFinite(operand)))) return FALL_BACK;
        if (current !== undefined) {
          if (typeof current !== typeof operand) return FALL_BACK;
          const value = current as string | number;
          const keep = operator === '$min' ? value <= operand : value >= operand;
          if (keep) continue;
        }
        next = operand === 0 ? 0 : operand; // -0 is 0 in JSON
        break;
      }
    }
    parent[leaf] = next;
    changed = true;
  }
  return changed ? (root as Doc) : undefined;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/**
 * A copy of `value` that is its own JSON round trip, or FALL_BACK when the round trip would
 * change it (undefined, NaN, Infinity, Dates and other objects, holes, `__proto__` keys, toJSON).
 */
function jsonCopy(value: unknown): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : FALL_BACK;
    case 'object': {
      if (value === null) return null;
      if (Array.isArray(value)) {
        if (Object.getPrototypeOf(value) !== Array.prototype) return FALL_BACK;
        const out: unknown[] = [];
        for (let i = 0; i < value.length; i++) {
          if (!(i in value)) return FALL_BACK;
          const item = jsonCopy(value[i]);
          if (item === FALL_BACK) return FALL_BACK;
          out.push(item);
        }
        return out;
      }
      if (!isPlainObject(value) || Object.getOwnPropertySymbols(value).length) return FALL_BACK;
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        // mingo's isEqual reads `constructor`; JSON.stringify calls toJSON; `__proto__` is special.
        if (key === '__proto__' || key === 'constructor' || key === 'toJSON') return FALL_BACK;
        const item = jsonCopy(value[key]);
        if (item === FALL_BACK) return FALL_BACK;
        out[key] = item;
      }
      return out;
    }
    default:
      return FALL_BACK;
  }
}

/** mingo's isEqual on JSON values: key order does not matter, array order does. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => jsonEqual(item, other[i]));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && jsonEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

function requireId(doc: { _id?: unknown }): string {
  if (typeof doc._id !== 'string') throw new Error('every document needs a string _id');
  return doc._id;
}

function sameFields(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((field, i) => field === b[i]);
}
