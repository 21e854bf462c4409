import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Query as MingoQuery, aggregate as mingoAggregate, find as mingoFind } from 'mingo';
import { update as mingoUpdate } from 'mingo/updater';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatabaseSync } from 'node:sqlite';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { openStore } from '../harness/store.ts';
import { DuplicateKeyError, type Collection, type Doc, type Filter, type FindOptions, type Update } from '../../ports/store.ts';

type Contact = Doc & {
  projectId: string;
  email: string;
  name?: string;
  age?: number;
  tags?: string[];
  data?: Record<string, unknown>;
  events?: { name: string; count: number; last: string }[];
};

let dir: string;
let store: SqliteStore;
let contacts: Collection<Contact>;

beforeEach(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-store-'));
  store = await openStore(dir);
  contacts = store.collection<Contact>('contacts');
});

afterEach(async () => {
  await store.close().catch(() => undefined);
  await fs.promises.rm(dir, { recursive: true, force: true });
});

async function reopen(): Promise<void> {
  await store.close();
  store = await openStore(dir);
  contacts = store.collection<Contact>('contacts');
}

function contact(id: string, extra: Partial<Contact> = {}): Contact {
  return { _id: id, projectId: 'p1', email: `${id}@example.com`, ...extra };
}

describe('CRUD', () => {
  it('inserts, finds, counts and deletes', async () => {
    await contacts.insertOne(contact('a', { age: 30 }));
    await contacts.insertMany([contact('b', { age: 20 }), contact('c', { projectId: 'p2' })]);

    expect(await contacts.findOne({ _id: 'a' })).toEqual(contact('a', { age: 30 }));
    expect(await contacts.findOne({ _id: 'zzz' })).toBeNull();
    expect(await contacts.countDocuments({})).toBe(3);
    expect(await contacts.countDocuments({ projectId: 'p1' })).toBe(2);
    expect((await contacts.find({ age: { $gte: 25 } })).map((d) => d._id)).toEqual(['a']);
    expect((await contacts.find({ age: { $exists: false } })).map((d) => d._id)).toEqual(['c']);

    expect(await contacts.deleteOne({ projectId: 'p1' })).toBe(1);
    expect(await contacts.deleteMany({ projectId: { $in: ['p1', 'p2'] } })).toBe(2);
    expect(await contacts.deleteMany({})).toBe(0);
    expect(await contacts.countDocuments({})).toBe(0);
  });

  it('deletes by a list of ids, those only, however odd the ids', async () => {
    const odd = ["it's", 'a"b', '%', 'a,b'];
    await contacts.insertMany([contact('a'), contact('b'), ...odd.map((id) => contact(id))]);
    expect(await contacts.deleteMany({ _id: { $in: ['a', 'nobody', ...odd] } })).toBe(5);
    expect((await contacts.find({})).map((d) => d._id)).toEqual(['b']);
    expect(await contacts.deleteMany({ _id: { $in: [] } })).toBe(0);
    expect(await contacts.countDocuments({})).toBe(1);
  });

  it('rejects a duplicate _id and documents without a string _id', async () => {
    await contacts.insertOne(contact('a'));
    await expect(contacts.insertOne(contact('a', { name: 'other' }))).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(contacts.insertOne({ projectId: 'p1' } as unknown as Contact)).rejects.toThrow(/_id/);
    expect(await contacts.find({})).toEqual([contact('a')]);
  });

  it('insertMany stops at the first duplicate, keeping the documents before it', async () => {
    await contacts.insertOne(contact('b'));
    await expect(contacts.insertMany([contact('a'), contact('b'), contact('c')])).rejects.toBeInstanceOf(DuplicateKeyError);
    expect((await contacts.find({})).map((d) => d._id)).toEqual(['b', 'a']);
  });

  it.each([
    ['a collection without indexes (written by id without a read)', false],
    ['a collection with an indexed field', true],
  ])('replaceOne replaces whole documents and upserts, in %s', async (_, indexed) => {
    if (indexed) await store.ensureIndexes('contacts', [{ keys: { name: 1 } }]);
    await contacts.insertOne(contact('a', { name: 'Ann', age: 3 }));
    expect(await contacts.replaceOne({ _id: 'a' }, contact('a', { name: 'Anna' }))).toEqual({ matched: 1, modified: 1 });
    expect(await contacts.findOne({ _id: 'a' })).toEqual(contact('a', { name: 'Anna' }));
    expect(await contacts.replaceOne({ _id: 'a' }, contact('a', { name: 'Anna' }))).toEqual({ matched: 1, modified: 0 });
    expect(await contacts.replaceOne({ _id: 'x' }, contact('x'))).toEqual({ matched: 0, modified: 0 });
    expect(await contacts.replaceOne({ _id: 'x' }, contact('x'), { upsert: true })).toEqual({
      matched: 0,
      modified: 0,
      upsertedId: 'x',
    });
    expect(await contacts.countDocuments({})).toBe(2);
    await expect(contacts.replaceOne({ _id: 'a' }, contact('other'))).rejects.toThrow(/_id/);
  });

  it('hands out copies and stores copies', async () => {
    const original = contact('a', { tags: ['x'], data: { plan: 'pro' } });
    await contacts.insertOne(original);
    original.tags!.push('mutated');
    (original.data as Record<string, unknown>).plan = 'mutated';

    const found = (await contacts.findOne({ _id: 'a' }))!;
    expect(found.tags).toEqual(['x']);
    found.tags!.push('again');
    (found.data as Record<string, unknown>).plan = 'again';
    const [listed] = await contacts.find({});
    listed.tags!.push('again');

    const value = { nested: { n: 1 } };
    await contacts.updateOne({ _id: 'a' }, { $set: { extra: value } });
    value.nested.n = 2;
    const updated = await contacts.findOneAndUpdate({ _id: 'a' }, { $set: { age: 1 } });
    updated!.tags!.push('again');
    const [aggregated] = await contacts.aggregate<Contact>([{ $match: { _id: 'a' } }]);
    aggregated.tags!.push('again');
    // mingo's $unwind and $set write into their input; the stored document must not notice.
    await contacts.aggregate([
      { $match: { projectId: 'p1' } },
      { $unwind: { path: '$events', preserveNullAndEmptyArrays: true, includeArrayIndex: 'i' } },
      { $set: { 'data.plan': 'agg' } },
    ]);

    expect(await contacts.findOne({ _id: 'a' })).toEqual({
      ...contact('a', { tags: ['x'], data: { plan: 'pro' } }),
      extra: { nested: { n: 1 } },
      age: 1,
    });
  });

  it('throws after close', async () => {
    await store.close();
    await expect(contacts.find({})).rejects.toThrow(/closed/);
    await expect(store.collection('other').insertOne({ _id: 'a' })).rejects.toThrow(/closed/);
    await expect(store.ensureIndexes('contacts', [{ keys: { email: 1 } }])).rejects.toThrow(/closed/);
    await expect(store.close()).rejects.toThrow(/closed/);
  });
});

describe('update operators', () => {
  beforeEach(async () => {
    await contacts.insertOne(contact('a', { age: 30, name: 'Ann', tags: ['x', 'y'], data: { score: 5 } }));
  });

  const get = async () => (await contacts.findOne({ _id: 'a' }))!;

  it('$set and $unset, including dotted paths', async () => {
    expect(await contacts.updateOne({ _id: 'a' }, { $set: { name: 'Bo', 'data.plan': 'pro' }, $unset: { age: '' } })).toEqual({
      matched: 1,
      modified: 1,
    });
    const doc = await get();
    expect(doc.name).toBe('Bo');
    expect(doc.data).toEqual({ score: 5, plan: 'pro' });
    expect('age' in doc).toBe(false);
  });

  it('$inc, $max and $min', async () => {
    await contacts.updateOne({ _id: 'a' }, { $inc: { age: 2, 'data.score': -1, visits: 1 } });
    await contacts.updateOne({ _id: 'a' }, { $max: { age: 40 }, $min: { 'data.score': 1 } });
    expect(await contacts.updateOne({ _id: 'a' }, { $max: { age: 10 } })).toEqual({ matched: 1, modified: 0 });
    const doc = await get();
    expect(doc.age).toBe(40);
    expect(doc.data).toEqual({ score: 1 });
    expect(doc.visits).toBe(1);
  });

  it('$push, $pull and $addToSet', async () => {
    await contacts.updateOne({ _id: 'a' }, { $push: { tags: 'z' } });
    await contacts.updateOne({ _id: 'a' }, { $pull: { tags: 'x' } });
    await contacts.updateOne({ _id: 'a' }, { $addToSet: { tags: 'y' } });
    await contacts.updateOne({ _id: 'a' }, { $addToSet: { tags: 'w' } });
    await contacts.updateOne({ _id: 'a' }, { $push: { events: { name: 'open', count: 1, last: '2024-01-01' } } });
    const doc = await get();
    expect(doc.tags).toEqual(['y', 'z', 'w']);
    expect(doc.events).toEqual([{ name: 'open', count: 1, last: '2024-01-01' }]);
  });

  it('updateMany reports matched and modified', async () => {
    await contacts.insertMany([contact('b', { age: 30 }), contact('c', { age: 1 })]);
    expect(await contacts.updateMany({ age: 30 }, { $set: { name: 'Ann' } })).toEqual({ matched: 2, modified: 1 });
    expect(await contacts.countDocuments({ name: 'Ann' })).toBe(2);
  });

  it('rejects replacement documents and _id changes', async () => {
    await expect(contacts.updateOne({ _id: 'a' }, { name: 'x' })).rejects.toThrow();
    await expect(contacts.updateOne({ _id: 'a' }, { $set: { _id: 'b' } })).rejects.toThrow();
    expect(await get()).toMatchObject({ _id: 'a', name: 'Ann' });
  });

  it('findOneAndUpdate returns the document after (default) or before', async () => {
    expect(await contacts.findOneAndUpdate({ _id: 'a' }, { $inc: { age: 1 } })).toMatchObject({ age: 31 });
    expect(await contacts.findOneAndUpdate({ _id: 'a' }, { $inc: { age: 1 } }, { returnDocument: 'before' })).toMatchObject({
      age: 31,
    });
    expect(await contacts.findOneAndUpdate({ _id: 'nope' }, { $inc: { age: 1 } })).toBeNull();
    expect(
      await contacts.findOneAndUpdate({ _id: 'n' }, { $inc: { age: 1 } }, { upsert: true, returnDocument: 'before' }),
    ).toBeNull();
    expect(await contacts.findOneAndUpdate({ _id: 'm', projectId: 'p9' }, { $inc: { age: 1 } }, { upsert: true })).toEqual({
      _id: 'm',
      projectId: 'p9',
      age: 1,
    });
  });
});

describe('upsert', () => {
  it('builds the document from filter equality fields, the update and $setOnInsert', async () => {
    const first = await contacts.updateOne(
      { _id: 'a', projectId: 'p1', 'data.plan': { $eq: 'pro' }, age: { $gt: 5 } },
      { $inc: { visits: 1 }, $setOnInsert: { createdAt: '2024-01-01T00:00:00.000Z' } },
      { upsert: true },
    );
    expect(first).toEqual({ matched: 0, modified: 0, upsertedId: 'a' });
    expect(await contacts.findOne({ _id: 'a' })).toEqual({
      _id: 'a',
      projectId: 'p1',
      data: { plan: 'pro' },
      visits: 1,
      createdAt: '2024-01-01T00:00:00.000Z',
    });

    // On a match $setOnInsert does nothing.
    const second = await contacts.updateOne(
      { _id: 'a' },
      { $inc: { visits: 1 }, $setOnInsert: { createdAt: 'later' } },
      { upsert: true },
    );
    expect(second).toEqual({ matched: 1, modified: 1 });
    expect(await contacts.findOne({ _id: 'a' })).toMatchObject({ visits: 2, createdAt: '2024-01-01T00:00:00.000Z' });
  });

  it('takes _id from $setOnInsert and requires one somewhere', async () => {
    const result = await contacts.updateOne(
      { projectId: 'p1', email: 'x@example.com' },
      { $set: { name: 'X' }, $setOnInsert: { _id: 'x' } },
      { upsert: true },
    );
    expect(result.upsertedId).toBe('x');
    expect(await contacts.findOne({ _id: 'x' })).toEqual({ _id: 'x', projectId: 'p1', email: 'x@example.com', name: 'X' });
    await expect(contacts.updateOne({ projectId: 'p2' }, { $set: { name: 'Y' } }, { upsert: true })).rejects.toThrow(/_id/);
    expect(await contacts.countDocuments({})).toBe(1);
  });
});

describe('unique indexes', () => {
  beforeEach(async () => {
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }, { keys: { projectId: 1 } }]);
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }]); // idempotent
    await contacts.insertMany([contact('a'), contact('b')]);
  });

  const snapshot = () => contacts.find({}, { sort: { _id: 1 } });

  it('rejects inserts, updates, upserts and replaces that duplicate a key, changing nothing', async () => {
    const before = await snapshot();
    const dup = { email: 'a@example.com' };
    await expect(contacts.insertOne(contact('c', dup))).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(contacts.updateOne({ _id: 'b' }, { $set: dup })).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(contacts.updateMany({}, { $set: { email: 'same@example.com' } })).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(contacts.findOneAndUpdate({ _id: 'b' }, { $set: dup })).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(contacts.replaceOne({ _id: 'b' }, contact('b', dup))).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(
      contacts.updateOne({ _id: 'c', projectId: 'p1', email: 'a@example.com' }, { $set: { n: 1 } }, { upsert: true }),
    ).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(contacts.replaceOne({ _id: 'c' }, contact('c', dup), { upsert: true })).rejects.toBeInstanceOf(DuplicateKeyError);
    await expect(contacts.insertMany([contact('c', dup)])).rejects.toBeInstanceOf(DuplicateKeyError);

    expect(await snapshot()).toEqual(before);
    await reopen();
    expect(await snapshot()).toEqual(before);
  });

  it('keeps unique indexes current through updates and deletes', async () => {
    await contacts.updateOne({ _id: 'a' }, { $set: { email: 'new@example.com' } });
    await contacts.insertOne(contact('c', { email: 'a@example.com' }));
    expect(await contacts.findOne({ projectId: 'p1', email: 'a@example.com' })).toMatchObject({ _id: 'c' });
    expect(await contacts.findOne({ projectId: 'p1', email: 'new@example.com' })).toMatchObject({ _id: 'a' });
    await contacts.deleteOne({ _id: 'c' });
    expect(await contacts.findOne({ projectId: 'p1', email: 'a@example.com' })).toBeNull();
    await contacts.insertOne(contact('d', { email: 'a@example.com' }));
    expect(await contacts.countDocuments({ projectId: 'p1' })).toBe(3);
  });

  it('finds by the whole unique key with any further condition, as mingo does', async () => {
    await contacts.updateOne({ _id: 'a' }, { $set: { tags: ['x', 'y'], age: 3 } });
    const key = { projectId: 'p1', email: 'a@example.com' };
    const cases: [Filter, string[]][] = [
      [key, ['a']],
      [{ ...key, tags: 'y' }, ['a']], // an array: mingo decides
      [{ ...key, tags: 'z' }, []],
      [{ ...key, age: { $gt: 2 } }, ['a']],
      [{ ...key, age: { $gt: 3 } }, []],
      [{ ...key, _id: 'b' }, []],
      [{ projectId: 'p1', email: 'b@example.com', _id: 'b' }, ['b']],
      [{ _id: 'a', tags: 'x' }, ['a']],
    ];
    for (const [filter, ids] of cases) {
      expect((await contacts.find(filter)).map((d) => d._id), JSON.stringify(filter)).toEqual(ids);
      expect((await contacts.find(filter, { projection: { email: 1 } })).map((d) => d._id)).toEqual(ids);
      expect(await contacts.find(filter, { skip: 1 })).toEqual([]);
    }
  });

  it('finds by _id with any further condition, and updates only a match, as mingo does', async () => {
    await contacts.updateOne({ _id: 'a' }, { $set: { tags: ['x', 'y'], age: 3, status: 'SENDING' } });
    const cases: [Filter, string[]][] = [
      [{ _id: 'a', status: { $in: ['QUEUED', 'SENDING'] } }, ['a']],
      [{ _id: 'a', status: { $in: ['QUEUED'] } }, []],
      [{ _id: 'a', $or: [{ retryAt: { $exists: false } }, { retryAt: { $lte: 'z' } }] }, ['a']],
      [{ _id: 'a', $or: [{ retryAt: { $exists: true } }, { age: { $gt: 5 } }] }, []],
      [{ _id: 'a', tags: { $all: ['y', 'x'] } }, ['a']],
      [{ _id: 'a', 'data.missing': null }, ['a']],
      [{ _id: 'a', age: { $not: { $gt: 2 } } }, []],
      [{ _id: 'nobody', age: { $gte: 0 } }, []],
    ];
    for (const [filter, ids] of cases) {
      const docs = await contacts.find({});
      expect(mingoFind(docs, filter).all().map((d) => (d as Doc)._id), JSON.stringify(filter)).toEqual(ids);
      expect((await contacts.find(filter)).map((d) => d._id), JSON.stringify(filter)).toEqual(ids);
      expect((await contacts.find(filter, { projection: { age: 1 } })).map((d) => d._id)).toEqual(ids);
    }
    expect(await contacts.findOneAndUpdate({ _id: 'a', status: { $in: ['QUEUED'] } }, { $inc: { age: 1 } })).toBeNull();
    expect((await contacts.findOneAndUpdate({ _id: 'a', status: { $in: ['SENDING'] } }, { $inc: { age: 1 } }))?.age).toBe(4);
  });

  it('insertNew inserts the documents whose ids are free, and still refuses a duplicate on another unique index', async () => {
    const marks = store.collection<{ _id: string; k: string }>('marks');
    await store.ensureIndexes('marks', [{ keys: { k: 1 }, unique: true }]);
    expect(await marks.insertNew([{ _id: 'a', k: 'a' }, { _id: 'b', k: 'b' }])).toEqual(['a', 'b']);
    expect(await marks.insertNew([{ _id: 'a', k: 'x' }, { _id: 'c', k: 'c' }, { _id: 'b', k: 'y' }])).toEqual(['c']);
    expect((await marks.find({})).map((d) => [d._id, d.k])).toEqual([['a', 'a'], ['b', 'b'], ['c', 'c']]);
    await expect(marks.insertNew([{ _id: 'd', k: 'a' }])).rejects.toBeInstanceOf(DuplicateKeyError);
    expect(await marks.insertNew([])).toEqual([]);
    // Several at once, one refused by the other index: none is inserted, also where the index is
    // one an earlier process made (the table is opened without it being declared again).
    await expect(marks.insertNew([{ _id: 'e', k: 'e' }, { _id: 'f', k: 'a' }])).rejects.toBeInstanceOf(DuplicateKeyError);
    await reopen();
    const reopened = store.collection<{ _id: string; k: string }>('marks');
    await expect(reopened.insertNew([{ _id: 'e', k: 'e' }, { _id: 'f', k: 'a' }])).rejects.toBeInstanceOf(DuplicateKeyError);
    expect((await reopened.find({})).map((d) => d._id)).toEqual(['a', 'b', 'c']);
  });

  it('finds a list of ids, with further conditions, projection and limit, as mingo does and in insertion order', async () => {
    await contacts.updateOne({ _id: 'a' }, { $set: { tags: ['x', 'y'], age: 3 } });
    const all = await contacts.find({});
    const cases: [Filter, FindOptions][] = [
      [{ _id: { $in: ['b', 'a', 'nobody', 'b'] } }, {}],
      [{ _id: { $in: ['b', 'a'] }, tags: 'x' }, {}],
      [{ _id: { $in: ['b', 'a'] }, age: { $gt: 5 } }, {}],
      [{ _id: { $in: ['b', 'a'] } }, { limit: 1 }],
      [{ _id: { $in: ['b', 'a'] } }, { projection: { email: 1 } }],
      // Read field by field out of the rows: arrays, numbers, a field one of them lacks, `_id` named.
      [{ _id: { $in: ['b', 'a', 'nobody'] } }, { projection: { tags: 1, age: 1, _id: 1 } }],
      [{ _id: { $in: ['a', 'b'] } }, { projection: { email: 1 }, limit: 1 }],
      [{ _id: 'a' }, { projection: { tags: 1, name: 1 } }],
      [{ _id: 'nobody' }, { projection: { tags: 1 } }],
      [{ _id: { $in: [] } }, {}],
    ];
    for (const [filter, options] of cases) {
      const expected = mingoFind(all, filter, options.projection).all() as Doc[];
      const wanted = options.limit ? expected.slice(0, options.limit) : expected;
      const found = await contacts.find(filter, options);
      expect(found.map((d) => d._id), JSON.stringify([filter, options])).toEqual(wanted.map((d) => d._id));
      expect(found, JSON.stringify([filter, options])).toEqual(wanted);
    }
  });

  it('keeps a unique index across a reopen and refuses an index the data violates', async () => {
    await reopen();
    await expect(contacts.insertOne(contact('c', { email: 'b@example.com' }))).rejects.toBeInstanceOf(DuplicateKeyError);
    const others = store.collection<Contact>('others');
    await others.insertMany([contact('a'), contact('c', { email: 'a@example.com' })]); // no index yet
    await expect(store.ensureIndexes('others', [{ keys: { projectId: 1, email: 1 }, unique: true }])).rejects.toBeInstanceOf(DuplicateKeyError);
    await others.deleteOne({ _id: 'c' });
    await store.ensureIndexes('others', [{ keys: { projectId: 1, email: 1 }, unique: true }]);
    await expect(store.ensureIndexes('others', [{ keys: { projectId: 1, email: 1 } }])).rejects.toThrow(/already exists with other options/);
    await expect(others.insertOne(contact('c', { email: 'a@example.com' }))).rejects.toBeInstanceOf(DuplicateKeyError);
    expect(await others.findOne({ projectId: 'p1', email: 'a@example.com' })).toMatchObject({ _id: 'a' });
  });
});

describe('indexed fields in columns', () => {
  /** Rows whose column of `field` differs from the field in the document. */
  const stale = (table: string, field: string) =>
    store.database.sqlite.prepare(`SELECT id FROM "${table}" WHERE "$${field}" IS NOT json_extract(doc, '$.${field}')`).all();

  it('keeps each column equal to its field through every kind of write, and across a reopen', async () => {
    await contacts.insertOne(contact('early', { age: 1 })); // before the index: filled when the column is made
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }, { keys: { 'profile.city': 1 } }]);
    await contacts.insertMany([contact('a', { profile: { city: 'Oslo' } } as Partial<Contact>), contact('b')]);
    await contacts.updateOne({ _id: 'a' }, { $set: { email: 'new@example.com', age: 3 } });
    await contacts.updateOne({ _id: 'b' }, { $set: { age: 4 } }); // indexed fields untouched
    await contacts.updateMany({ projectId: 'p1' }, { $set: { 'profile.city': 'Bergen' } });
    await contacts.replaceOne({ _id: 'b' }, contact('b', { projectId: 'p2' }));
    await contacts.findOneAndUpdate({ _id: 'c' }, { $set: { projectId: 'p3', email: 'c@example.com' } }, { upsert: true });
    await contacts.updateOne({ _id: 'a' }, { $unset: { profile: '' } });
    for (const field of ['projectId', 'email', 'profile.city']) expect(stale('contacts', field), field).toEqual([]);
    await reopen();
    // Written before this run declares its indexes: the columns are known from the table already.
    await contacts.updateOne({ _id: 'a' }, { $set: { projectId: 'p9' } });
    await contacts.insertOne(contact('d', { profile: { city: 'Rome' } } as Partial<Contact>));
    for (const field of ['projectId', 'email', 'profile.city']) expect(stale('contacts', field), field).toEqual([]);
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }, { keys: { 'profile.city': 1 } }]);
    expect((await contacts.find({ projectId: 'p9' })).map((d) => d._id)).toEqual(['a']);
    expect((await contacts.find({ 'profile.city': 'Rome' })).map((d) => d._id)).toEqual(['d']);
    expect((await contacts.find({}, { sort: { projectId: -1 }, projection: { _id: 1 } })).map((d) => d._id)).toEqual(['a', 'c', 'b', 'early', 'd']); // ties in insertion order
  });

  it('makes an index of the first SQLite store (on the document) again on the columns', async () => {
    await contacts.insertMany([contact('a'), contact('b', { projectId: 'p2' })]);
    store.database.sqlite.exec(`CREATE INDEX "contacts:projectId,_id" ON contacts (json_extract(doc, '$.projectId'), id)`);
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1 } }]);
    const { sql } = store.database.sqlite.prepare(`SELECT sql FROM sqlite_master WHERE name = 'contacts:projectId,_id'`).get() as { sql: string };
    expect(sql).toContain('"$projectId"');
    expect(sql).not.toContain('json_extract');
    expect(stale('contacts', 'projectId')).toEqual([]);
    expect((await contacts.find({ projectId: 'p2' })).map((d) => d._id)).toEqual(['b']);
  });
});

describe('queries', () => {
  beforeEach(async () => {
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1 } }]);
    await contacts.insertMany([
      contact('a', { name: 'Ann Lee', age: 30, events: [{ name: 'open', count: 3, last: '2024-03-01' }] }),
      contact('b', { name: 'bob', age: 20, events: [{ name: 'click', count: 1, last: '2024-02-01' }] }),
      contact('c', {
        name: 'ANNA',
        age: 40,
        events: [
          { name: 'open', count: 1, last: '2024-01-01' },
          { name: 'click', count: 5, last: '2024-04-01' },
        ],
      }),
      contact('d', { projectId: 'p2', name: 'Dan', age: 25 }),
    ]);
  });

  const ids = (docs: Doc[]) => docs.map((d) => d._id);

  it('sorts, skips, limits and projects', async () => {
    expect(ids(await contacts.find({}, { sort: { age: -1 } }))).toEqual(['c', 'a', 'd', 'b']);
    expect(ids(await contacts.find({ projectId: 'p1' }, { sort: { age: 1 }, skip: 1, limit: 1 }))).toEqual(['a']);
    expect(ids(await contacts.find({}, { skip: 1, limit: 2 }))).toEqual(['b', 'c']);
    expect(await contacts.findOne({ projectId: 'p1' }, { sort: { name: 1 } })).toMatchObject({ _id: 'c' }); // 'ANNA' < 'Ann Lee'
    expect(await contacts.find({ _id: 'a' }, { projection: { name: 1 } })).toEqual([{ _id: 'a', name: 'Ann Lee' }]);
    const [excluded] = await contacts.find({ _id: 'a' }, { projection: { events: 0, email: 0 } });
    expect(excluded).toEqual({ _id: 'a', projectId: 'p1', name: 'Ann Lee', age: 30 });
  });

  it('matches $regex with the i option', async () => {
    expect(ids(await contacts.find({ name: { $regex: '^ann', $options: 'i' } }))).toEqual(['a', 'c']);
    expect(ids(await contacts.find({ name: { $regex: '^ann' } }))).toEqual([]);
  });

  it('matches $elemMatch on arrays of {name, count, last}', async () => {
    const opened = { events: { $elemMatch: { name: 'open', count: { $gte: 2 } } } };
    expect(ids(await contacts.find(opened))).toEqual(['a']);
    const clickedSince = { projectId: 'p1', events: { $elemMatch: { name: 'click', last: { $gte: '2024-03-01' } } } };
    expect(ids(await contacts.find(clickedSince))).toEqual(['c']);
    expect(ids(await contacts.find({ 'events.name': 'open' }))).toEqual(['a', 'c']); // via the multikey index
  });

  it('matches $in on _id and plain/dotted equality', async () => {
    expect(ids(await contacts.find({ _id: { $in: ['d', 'a', 'zz'] } }))).toEqual(['a', 'd']);
    expect(ids(await contacts.find({ _id: { $in: ['a', 'b'] }, age: { $gt: 25 } }))).toEqual(['a']);
    expect(await contacts.countDocuments({ projectId: { $eq: 'p1' }, 'events.count': 5 })).toBe(1);
    expect(await contacts.countDocuments({ projectId: 'p3' })).toBe(0);
  });

  it('aggregates with $match, $group, $sort, $limit, $project, $unwind and $count', async () => {
    const perProject = await contacts.aggregate([
      { $match: { age: { $gte: 20 } } },
      { $group: { _id: '$projectId', n: { $sum: 1 }, ages: { $sum: '$age' } } },
      { $sort: { n: -1 } },
      { $limit: 1 },
      { $project: { _id: 0, projectId: '$_id', n: 1, ages: 1 } },
    ]);
    expect(perProject).toEqual([{ projectId: 'p1', n: 3, ages: 90 }]);

    const perEvent = await contacts.aggregate([
      { $match: { projectId: 'p1' } },
      { $unwind: '$events' },
      { $group: { _id: '$events.name', total: { $sum: '$events.count' } } },
      { $sort: { _id: 1 } },
    ]);
    expect(perEvent).toEqual([
      { _id: 'click', total: 6 },
      { _id: 'open', total: 4 },
    ]);
    expect(await contacts.aggregate([{ $match: { projectId: 'p1' } }, { $count: 'n' }])).toEqual([{ n: 3 }]);
  });
});

describe('read-mostly collections (cacheReads)', () => {
  beforeEach(async () => {
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }]);
    store.cacheReads('contacts');
    await contacts.insertMany([contact('a', { age: 30 }), contact('b', { age: 20 })]);
  });

  it('answers a repeated query from memory, with a fresh copy each time', async () => {
    const first = await contacts.find({ projectId: 'p1' }, { sort: { age: 1 } });
    // Changed behind the store's back: a cached answer does not see it, a read from SQLite would.
    store.database.sqlite.exec(`UPDATE contacts SET doc = jsonb_set(doc, '$.age', 99) WHERE id = 'a'`);
    first[0].age = 1;
    expect(await contacts.find({ projectId: 'p1' }, { sort: { age: 1 } })).toEqual([contact('b', { age: 20 }), contact('a', { age: 30 })]);
    expect(await contacts.findOne({ _id: 'a' })).toEqual(contact('a', { age: 99 })); // another query: read anew
  });

  it('never answers what a write has changed, whichever write it was', async () => {
    const ask = () => contacts.find({ projectId: 'p1' }, { projection: { age: 1 } });
    await ask();
    await contacts.updateOne({ _id: 'a' }, { $set: { age: 31 } });
    expect(await ask()).toEqual([{ _id: 'a', age: 31 }, { _id: 'b', age: 20 }]);
    await contacts.insertOne(contact('c', { age: 5 }));
    expect((await ask()).map((d) => d._id)).toEqual(['a', 'b', 'c']);
    await contacts.replaceOne({ _id: 'c' }, contact('c', { age: 6 }));
    expect((await ask())[2]).toEqual({ _id: 'c', age: 6 });
    await contacts.findOneAndUpdate({ _id: 'c' }, { $inc: { age: 1 } });
    expect((await ask())[2]).toEqual({ _id: 'c', age: 7 });
    await contacts.updateMany({}, { $set: { age: 0 } });
    expect((await ask()).map((d) => d.age)).toEqual([0, 0, 0]);
    await contacts.deleteOne({ _id: 'c' });
    await contacts.deleteMany({ _id: 'b' });
    expect(await ask()).toEqual([{ _id: 'a', age: 0 }]);
    // A refused write changes nothing, and the answer after it is still the true one.
    await expect(contacts.insertOne(contact('a'))).rejects.toBeInstanceOf(DuplicateKeyError);
    expect(await ask()).toEqual([{ _id: 'a', age: 0 }]);
  });

  it('answers a shared read with one frozen copy, which a write replaces and a fresh read does not see', async () => {
    await contacts.updateOne({ _id: 'b' }, { $set: { data: { city: 'Oslo' } } });
    const ask = () => contacts.find({ projectId: 'p1' }, { sort: { age: 1 }, shared: true });
    await ask(); // the miss: read from SQLite
    const first = await ask();
    expect(await ask()).toBe(first);
    expect(Object.isFrozen(first) && Object.isFrozen(first[0])).toBe(true);
    expect(() => {
      first[0].data!.city = 'Bergen';
    }).toThrow(TypeError);
    // A read that may change its answer gets its own copy of the same answer.
    const fresh = await contacts.find({ projectId: 'p1' }, { sort: { age: 1 } });
    expect(fresh).toEqual(first);
    fresh[0].age = 1;
    expect(first[0].age).toBe(20);
    await contacts.updateOne({ _id: 'b' }, { $set: { age: 21 } });
    expect((await ask())[0].age).toBe(21);
    expect(first[0].age).toBe(20); // what a reader holds does not change under it
  });

  it('does not cache a query JSON cannot say exactly', async () => {
    expect(await contacts.find({ email: { $regex: /^A@/i } })).toHaveLength(1);
    expect(await contacts.find({ email: { $regex: /^B@/i } })).toEqual([contact('b', { age: 20 })]);
  });
});

describe('persistence', () => {
  it('survives close and reopen', async () => {
    await contacts.insertMany([contact('a'), contact('b'), contact('c')]);
    await contacts.updateOne({ _id: 'a' }, { $set: { name: 'Ann' } });
    await contacts.deleteOne({ _id: 'b' });
    await store.collection('events').insertOne({ _id: 'e1', type: 'open' });
    const before = await contacts.find({});
    await reopen();
    expect(await contacts.find({})).toEqual(before);
    expect(await store.collection('events').find({})).toEqual([{ _id: 'e1', type: 'open' }]);
  });

  it('has a write on disk, for any other connection, once its promise resolves', async () => {
    await contacts.insertOne(contact('a'));
    const other = new DatabaseSync(path.join(dir, 'mailroom.db'), { readOnly: true });
    try {
      expect(other.prepare('SELECT id FROM contacts').all().map((row) => row.id)).toEqual(['a']);
    } finally {
      other.close();
    }
  });
});

describe('the journal store of earlier versions', () => {
  const journalDir = () => path.join(dir, 'store');
  const journalFile = () => path.join(journalDir(), 'store.journal');
  const writeJournal = (text: string) => {
    fs.mkdirSync(journalDir(), { recursive: true });
    fs.writeFileSync(journalFile(), text);
  };
  const put = (c: string, doc: Doc) => `${JSON.stringify({ c, p: doc })}\n`;

  it('is imported once, in order, without its torn last line, and left as it was', async () => {
    const text =
      put('contacts', contact('a', { name: 'first' })) +
      put('contacts', contact('b')) +
      put('events', { _id: 'e1', type: 'open' }) +
      put('contacts', contact('a', { name: 'second' })) +
      `${JSON.stringify({ c: 'contacts', d: 'b' })}\n` +
      '{"c":"contacts","p":{"_id":"c","proj';
    writeJournal(text);
    expect(store.importJournal(journalDir())).toBe(5);
    expect(await contacts.find({})).toEqual([contact('a', { name: 'second' })]);
    expect(await store.collection('events').find({})).toEqual([{ _id: 'e1', type: 'open' }]);
    expect(fs.readFileSync(journalFile(), 'utf8')).toBe(text);

    await contacts.deleteOne({ _id: 'a' });
    await reopen();
    expect(store.importJournal(journalDir())).toBeUndefined();
    expect(await contacts.find({})).toEqual([]);
  });

  it('refuses a corrupt line in the middle and imports nothing', async () => {
    writeJournal(put('contacts', contact('a')) + 'garbage\n' + put('contacts', contact('b')));
    expect(() => store.importJournal(journalDir())).toThrow(/corrupt/);
    expect(await contacts.find({})).toEqual([]);
  });

  it('is nothing to import when there is no journal', () => {
    expect(store.importJournal(journalDir())).toBeUndefined();
  });
});

describe('scale', () => {
  it('inserts 200k small documents and counts them through an index', async () => {
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1 } }, { keys: { projectId: 1, email: 1 }, unique: true }]);
    const docs: Contact[] = [];
    for (let i = 0; i < 200_000; i++) {
      docs.push(contact(`c${i}`, { projectId: `p${i % 2}`, data: { plan: i % 4 === 0 ? 'pro' : 'free' } }));
    }
    let started = performance.now();
    await contacts.insertMany(docs);
    const insertMs = performance.now() - started;

    started = performance.now();
    const pro = await contacts.countDocuments({ projectId: 'p0', 'data.plan': 'pro' });
    const countMs = performance.now() - started;
    expect(pro).toBe(50_000);
    expect(await contacts.findOne({ projectId: 'p1', email: 'c199999@example.com' })).toMatchObject({ _id: 'c199999' });
    console.info(`200k docs: insertMany ${insertMs.toFixed(0)} ms, indexed count ${countMs.toFixed(0)} ms`);
  });
});

// ---- fast paths ------------------------------------------------------------------------------
// The store answers common filters, updates, projections and sorted pages without mingo. Each
// test below runs many cases through the fast path and checks it returns exactly (JSON text,
// so key order counts) what mingo returns, and what the store's general path returns (a filter
// wrapped in `$and` keeps its index terms but is decided by the whole expression, none of it
// exactly by an index; a sort without a limit is mingo's $sort over every match).

const json = (value: unknown) => JSON.stringify(value);
const roundTrip = <V>(value: V): V => JSON.parse(JSON.stringify(value)) as V;
const mingoMatches = (docs: Doc[], filter: Filter) => docs.filter((doc) => new MingoQuery(filter).test(doc));

/** Shapes the equality fast path must tell apart: missing, null, arrays, nested arrays, types. */
const MIXED: Doc[] = [
  { _id: 'd01', projectId: 'p1', email: 'a@x', n: 1, s: 'b', flag: true, profile: { city: 'Oslo', zip: '0150' }, tags: ['x', 'y'] },
  { _id: 'd02', projectId: 'p1', email: 'b@x', n: 2, s: 'a', flag: false, profile: { city: 'Bergen' }, tags: 'x' },
  { _id: 'd03', projectId: 'p1', email: 'c@x', n: '1', s: 'B', flag: 'true', profile: null },
  { _id: 'd04', projectId: 'p1', n: null, s: null, profile: 'Oslo', tags: [] },
  { _id: 'd05', projectId: 'p2', email: 'a@x', n: 0, s: '', profile: { city: ['Oslo', 'Bergen'] }, tags: [['x']] },
  { _id: 'd06', projectId: 'p2', email: 'e@x', n: -3.5, s: 'ä', profile: [{ city: 'Oslo' }, { city: 'Rome' }], tags: ['y'] },
  { _id: 'd07', projectId: 'p2', email: 'f@x', n: 10, profile: { city: { name: 'Oslo' } }, nested: { deep: { v: 1 } } },
  { _id: 'd08', projectId: ['p1', 'p2'], email: 'g@x', n: [1, 2], s: 'b', tags: ['x'], events: [{ name: 'open' }, { name: ['click'] }] },
  { _id: 'd09', email: 'h@x', n: 1, 1: 'one', events: [{ name: 'click' }] },
  { _id: 'd10', projectId: 'p1', email: 'a@x', n: 1.5, s: 'b', flag: true, profile: { city: 'Oslo' }, nested: { deep: [{ v: 1 }] } },
  // A multikey index on `pos.0` holds d11 under 'x' (through the element's "0" key), though
  // mingo reads `pos.0` as the first element, an object: only the test proves it does not match.
  { _id: 'd11', projectId: 'p3', pos: [{ 0: 'x' }] },
  { _id: 'd12', projectId: 'p3', pos: ['x'] },
  { _id: 'd13', projectId: 'p3', pos: { 0: 'x' } },
  // For the plain-text $regex (instr): characters that only Unicode case folding maps to ASCII
  // (the Kelvin sign folds to k, the long s to s under `iu`), and non-ASCII text.
  { _id: 'd14', projectId: 'p1', email: 'K\u212a@Ä.x', s: 'Straße \u017f', n: 7 },
];
/** The same kind of documents with no array on any indexed path: the indexes stay exact. */
const PLAIN: Doc[] = MIXED.filter((doc) => !['d05', 'd06', 'd08', 'd11', 'd12'].includes(doc._id)).map((doc) => {
  const { tags: _tags, ...rest } = doc;
  return rest as Doc;
});
const INDEXED = [
  { keys: { projectId: 1 } },
  { keys: { projectId: 1, email: 1 } },
  { keys: { 'profile.city': 1 } },
  { keys: { n: 1 } },
  { keys: { flag: 1 } },
  { keys: { tags: 1 } },
  { keys: { 'events.name': 1 } },
  { keys: { 'pos.0': 1 } },
] as const;

const FILTERS: Filter[] = [
  {},
  { _id: 'd01' },
  { _id: 'nope' },
  { _id: { $eq: 'd02' } },
  { _id: 'd01', projectId: 'p1' },
  { _id: 'd01', projectId: 'p2' },
  { _id: 'd08', projectId: 'p2' },
  { _id: 5 },
  { _id: true, projectId: 'p1' },
  { _id: 'd01', n: { $gt: 0 } },
  { _id: { $in: ['d03', 'd01', 'zz', 7] } },
  { _id: { $in: ['d03', 'd01'] }, projectId: 'p1' },
  { _id: { $in: [] } },
  { projectId: { $in: ['p1', 'p3'] } },
  { projectId: { $in: [] } },
  { projectId: 'p1', email: { $in: ['a@x', 'zz', 7] } },
  { n: { $in: [1, '1', 2] } },
  { n: { $in: [null, 1] } },
  { n: { $in: [1.5, 0] }, flag: true },
  { tags: { $in: ['x', 'y'] } },
  { projectId: 'p1' },
  { projectId: { $eq: 'p2' } },
  { projectId: 'p3' },
  { projectId: 'p1', email: 'a@x' },
  { projectId: 'p2', email: 'a@x' },
  { projectId: 'p1', email: { $eq: 'b@x' } },
  { projectId: 'p1', email: 'a@x', n: 1 },
  { projectId: 'p1', 'profile.city': 'Oslo' },
  { 'profile.city': 'Oslo' },
  { 'profile.city': 'Rome' },
  { 'profile.city': 'Bergen', projectId: 'p2' },
  { 'profile.city.name': 'Oslo' },
  { 'profile.zip': '0150' },
  { 'profile.zip': 150 },
  { 'profile.length': 4 },
  { n: 1 },
  { n: '1' },
  { n: 0 },
  { n: -0 },
  { n: 2 },
  { n: 2, s: 'b' },
  { n: 1.5, flag: true },
  { n: null },
  { n: { $eq: null } },
  { n: undefined },
  { n: Infinity },
  { n: NaN },
  { n: { $gt: 0 } },
  { n: [1, 2] },
  { s: '' },
  { s: 'ä' },
  { s: 'B' },
  { s: { $eq: 'b' }, projectId: 'p1' },
  { flag: true },
  { flag: 'true' },
  { flag: false },
  { flag: { $eq: true }, 'profile.city': 'Oslo' },
  { tags: 'x' },
  { tags: ['x'] },
  { tags: 'y', projectId: 'p2' },
  { 'tags.0': 'x' },
  { tags: [] },
  { 'events.name': 'open' },
  { 'events.name': 'click' },
  { 'pos.0': 'x' },
  { 'pos.0': 'x', projectId: 'p3' },
  { 1: 'one' },
  { 'nested.deep.v': 1 },
  { 'nested.deep': { v: 1 } },
  { missing: 'x' },
  { 'missing.deeper': 1 },
  { projectId: 'p1', email: { $regex: '^[ab]' } },
  // Plain text in a $regex (what a "contains" search sends) is instr in SQLite.
  { email: { $regex: 'a@', $options: 'i' } },
  { email: { $regex: 'A@', $options: 'i' } },
  { email: { $regex: 'A@' } },
  { email: { $regex: 'k', $options: 'i' } },
  { email: { $regex: 'kk', $options: 'iu' } },
  { email: { $regex: '@\\.x', $options: 'i' } },
  { email: { $regex: '' } },
  { s: { $regex: 'S', $options: 'i' } },
  { s: { $regex: 'ss', $options: 'i' } },
  { s: { $regex: 's', $options: 'iu' } },
  { s: { $regex: 'b', $options: 'm' } },
  { s: { $regex: 'ä', $options: 'i' } },
  { n: { $regex: '1' } },
  { 'profile.city': { $regex: 'os', $options: 'i' } },
  { projectId: 'p1', email: { $not: { $regex: 'X', $options: 'i' } } },
  { projectId: { $regex: 'p' }, email: { $regex: '\\+', $options: 'i' } },
  { projectId: 'p1', $or: [{ n: 1 }, { n: 2 }] },
  { email: 'a@x', n: { $exists: true } },
  { $and: [{ projectId: 'p1' }, { email: 'a@x' }] },
  // Operators through the query-only context (and $expr through the full one).
  { $expr: { $gt: ['$n', 1] } },
  { projectId: 'p2', $expr: { $eq: ['$email', 'e@x'] } },
  { $or: [{ s: 'a' }, { $expr: { $eq: ['$n', 10] } }] },
  { n: { $not: { $gt: 1 } } },
  { tags: { $all: ['x'] } },
  { tags: { $size: 2 } },
  { n: { $type: 'string' } },
  { $nor: [{ n: 1 }, { projectId: 'p2' }] },
  { profile: { $elemMatch: { city: 'Oslo' } } },
  { s: { $in: ['a', null] } },
  { _id: { $lt: 'd05' } },
  { _id: { $gte: 'd03', $lt: 'd08' }, projectId: 'p1' },
  { _id: { $gt: 5 } },
  { email: { $nin: ['a@x', 'b@x'] }, projectId: 'p1' },
];

describe('fast paths agree with mingo', () => {
  const collections = [
    { name: 'mixed', docs: MIXED },
    { name: 'plain', docs: PLAIN },
  ];

  /** Indexes the fields of INDEXED that no document holds an array in (the store refuses those). */
  async function load(name: string, docs: Doc[], into: SqliteStore = store): Promise<Collection> {
    const arrayIn = (doc: Doc, field: string) => {
      let value: unknown = doc;
      for (const part of field.split('.')) {
        if (Array.isArray(value)) return true;
        if (value === null || typeof value !== 'object') return false;
        value = (value as Record<string, unknown>)[part];
      }
      // What an indexed field may not hold: an array, an object or a boolean.
      return Array.isArray(value) || typeof value === 'boolean' || (typeof value === 'object' && value !== null);
    };
    // Named fields only: a numeric part (`pos.0`) means an array position, which no index holds.
    const named = (field: string) => field.split('.').every((part) => !/^\d+$/.test(part));
    const usable = INDEXED.filter((spec) => Object.keys(spec.keys).every((field) => named(field) && docs.every((doc) => !arrayIn(doc, field))));
    await into.ensureIndexes(name, usable.map((spec) => ({ ...spec })));
    const collection = into.collection(name);
    await collection.insertMany(docs);
    return collection;
  }

  it('find, findOne and countDocuments on equality, _id, index and mixed filters', async () => {
    for (const { name, docs } of collections) {
      const collection = await load(name, docs);
      const stored = roundTrip(docs);
      for (const filter of FILTERS) {
        const label = `${name} ${json(filter)}`;
        const expected = mingoMatches(stored, filter);
        expect(json(await collection.find(filter)), label).toBe(json(expected));
        expect(json(await collection.find({ $and: [filter] })), label).toBe(json(expected));
        expect(json(await collection.findOne(filter)), label).toBe(json(expected[0] ?? null));
        expect(json(await collection.find(filter, { limit: 2, skip: 1 })), label).toBe(json(expected.slice(1, 3)));
        expect(await collection.countDocuments(filter), label).toBe(expected.length);
      }
    }
  });

  it('counts on the scan workers (worker threads with their own connections) what mingo counts', async () => {
    // Every count that tests documents goes to the workers (scanWorkersFrom: 0), split by rowid.
    const workersDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-store-'));
    const onWorkers = await openStore(workersDir, { scanWorkersFrom: 0 });
    try {
      for (const { name, docs } of collections) {
        const collection = await load(name, docs, onWorkers);
        const stored = roundTrip(docs);
        for (const filter of FILTERS) expect(await collection.countDocuments(filter), `${name} ${json(filter)}`).toBe(mingoMatches(stored, filter).length);
      }
      // What this connection wrote and has not committed yet is committed before a worker counts.
      const c = onWorkers.collection('fresh');
      for (let i = 0; i < 50; i++) void c.insertOne({ _id: `f${i}`, n: i });
      expect(await c.countDocuments({ n: { $gte: 10 } })).toBe(40);
      // Inside a unit (an actor turn) its own writes commit only when it ends: it counts here.
      await onWorkers.unit(async () => {
        await c.insertOne({ _id: 'f50', n: 50 });
        expect(await c.countDocuments({ n: { $gte: 10 } })).toBe(41);
      });
    } finally {
      await onWorkers.close();
      await fs.promises.rm(workersDir, { recursive: true, force: true });
    }
  });

  it('counts by a field ($group with $sum) as mingo does, SQLite counting what it can decide', async () => {
    const byKey = (rows: Doc[]) => json([...rows].sort((a, b) => (json(a._id) < json(b._id) ? -1 : json(a._id) > json(b._id) ? 1 : 0)));
    for (const { name, docs } of collections) {
      const collection = await load(name, docs);
      const stored = roundTrip(docs);
      for (const filter of FILTERS) {
        for (const field of ['s', 'n', 'flag', 'tags', 'profile.city', 'profile', 'missing', 'events.name']) {
          const pipeline = [{ $match: filter }, { $group: { _id: `$${field}`, count: { $sum: 1 }, twice: { $sum: 2 } } }];
          const expected = mingoAggregate(stored, pipeline) as Doc[];
          expect(byKey(await collection.aggregate(pipeline)), `${name} ${json(filter)} by ${field}`).toBe(byKey(expected));
        }
      }
    }
  });

  it('deletes and updates what the general path would', async () => {
    for (const filter of FILTERS) {
      const label = json(filter);
      const fast = await load('fast', MIXED);
      const general = await load('general', MIXED);
      expect(await fast.updateMany(filter, { $set: { hit: true } }), label).toEqual(
        await general.updateMany({ $and: [filter] }, { $set: { hit: true } }),
      );
      expect(await fast.deleteOne(filter), label).toBe(await general.deleteOne({ $and: [filter] }));
      expect(json(await fast.find({})), label).toBe(json(await general.find({})));
      await fast.deleteMany({});
      await general.deleteMany({});
    }
  });

  it('keeps indexes current (new versions in place, key changes, deletes) and refuses an array in an indexed field', async () => {
    await store.ensureIndexes('c', [{ keys: { projectId: 1 } }, { keys: { tags: 1 } }]);
    const c = store.collection('c');
    const same = async (filter: Filter) => {
      const found = await c.find(filter);
      const expected = await c.find({ $and: [filter] });
      expect(json(found), json(filter)).toBe(json(expected));
      expect(await c.countDocuments(filter), json(filter)).toBe(expected.length);
      return found.map((doc) => doc._id);
    };
    await c.insertMany([
      { _id: 'a', projectId: 'p1', tags: 'x', v: 1 },
      { _id: 'b', projectId: 'p1', tags: 'y', v: 1 },
      { _id: 'c', projectId: 'p1', tags: 'x', v: 1 },
    ]);
    await c.updateOne({ _id: 'a' }, { $inc: { v: 1 } }); // same keys: keeps its place, new version
    expect(await c.find({ projectId: 'p1' })).toMatchObject([{ _id: 'a', v: 2 }, { _id: 'b' }, { _id: 'c' }]);
    expect(await same({ projectId: 'p1' })).toEqual(['a', 'b', 'c']);
    await expect(c.replaceOne({ _id: 'b' }, { _id: 'b', projectId: 'p1', tags: ['x', 'z'], v: 3 })).rejects.toThrow(/indexed and cannot hold an array/);
    await expect(c.insertOne({ _id: 'd', projectId: ['p1'] })).rejects.toThrow(/indexed and cannot hold an array/);
    await expect(c.updateOne({ _id: 'c' }, { $set: { tags: ['z'] } })).rejects.toThrow(/indexed and cannot hold an array/);
    expect(await c.find({})).toEqual([
      { _id: 'a', projectId: 'p1', tags: 'x', v: 2 },
      { _id: 'b', projectId: 'p1', tags: 'y', v: 1 },
      { _id: 'c', projectId: 'p1', tags: 'x', v: 1 },
    ]);
    await c.updateOne({ _id: 'b' }, { $set: { tags: 'x' } });
    expect(await same({ tags: 'x' })).toEqual(['a', 'b', 'c']);
    expect(await same({ tags: 'y' })).toEqual([]);
    await c.updateOne({ _id: 'c' }, { $set: { projectId: 'p2' } }); // key change: moves
    expect(await same({ projectId: 'p1' })).toEqual(['a', 'b']);
    expect(await same({ projectId: 'p2' })).toEqual(['c']);
    await c.deleteOne({ _id: 'a' });
    expect(await same({ projectId: 'p1' })).toEqual(['b']);
    expect(await same({ tags: 'x' })).toEqual(['b', 'c']);
    await reopen();
    const reopened = store.collection('c');
    await store.ensureIndexes('c', [{ keys: { projectId: 1 } }, { keys: { tags: 1 } }]);
    expect(await reopened.find({ projectId: 'p1' })).toEqual([{ _id: 'b', projectId: 'p1', tags: 'x', v: 1 }]);
  });

  it('projections of top-level fields, with _id first or last as mingo orders them', async () => {
    const collection = await load('mixed', MIXED);
    const stored = roundTrip(MIXED);
    const projections: Record<string, 0 | 1>[] = [
      { _id: 1 },
      { email: 1 },
      { email: 1, n: 1 },
      { n: 1, email: 1 },
      { profile: 1, tags: 1 },
      { missing: 1 },
      { _id: 1, email: 1 },
      { s: 1, _id: 1 },
      { 1: 1, n: 1 },
      { 'profile.city': 1 }, // these three go to mingo
      { email: 0 },
      { _id: 0, email: 1 },
    ];
    for (const projection of projections) {
      for (const filter of [{}, { _id: 'd01' }, { projectId: 'p1' }]) {
        const label = `${json(projection)} ${json(filter)}`;
        const expected = mingoFind(mingoMatches(stored, filter), {}, projection).all();
        expect(json(await collection.find(filter, { projection })), label).toBe(json(expected));
      }
    }
    const [copy] = await collection.find({ _id: 'd01' }, { projection: { profile: 1 } });
    (copy.profile as { city: string }).city = 'changed';
    expect(await collection.findOne({ _id: 'd01' })).toMatchObject({ profile: { city: 'Oslo' } });
  });

  it('sorted pages (top-k) equal a full sort then a slice', async () => {
    await store.ensureIndexes('sorted', [{ keys: { projectId: 1 } }]);
    const collection = store.collection('sorted');
    const docs: Doc[] = [];
    const keys = ['b', 'a', 3, null, undefined, 'B', -1, 'a', 3, '', 'ä', 10, 'b', undefined, 2.5, null];
    for (let i = 0; i < 48; i++) {
      const k = keys[i % keys.length];
      docs.push({
        _id: `s${String(47 - i).padStart(2, '0')}`, // _id order is the reverse of insertion order
        projectId: i % 3 === 0 ? 'p2' : 'p1',
        ...(k === undefined ? {} : { k }),
        k2: i % 4,
        o: i % 5 === 0 ? { v: 'x' } : i % 5 === 1 ? {} : i % 5 === 2 ? null : { v: i % 7 },
      });
    }
    docs[7].mixed = true; // a boolean sort key: top-k gives way to mingo
    docs[9].arr = [1, 2];
    docs[11].o = [{ v: 1 }];
    docs[13].o = 'a string on the way';
    await collection.insertMany(docs);
    const sorts: Record<string, 1 | -1>[] = [
      { k: 1 },
      { k: -1 },
      { k: 1, _id: -1 },
      { k2: -1, k: 1 },
      { _id: -1 },
      { _id: 1 },
      { 'o.v': 1 },
      { 'o.v': -1, k2: 1 },
      { mixed: 1 },
      { arr: -1 },
      { k: 1, missing: -1 },
    ];
    const pages = [
      [0, 1],
      [0, 3],
      [2, 3],
      [0, 100],
      [5, 2],
      [47, 5],
      [100, 1],
    ];
    for (const filter of [{}, { projectId: 'p1' }, { k: { $exists: true } }, { k2: 1 }]) {
      for (const sort of sorts) {
        const all = await collection.find(filter, { sort }); // the general path: mingo's $sort
        const reference = mingoAggregate(mingoMatches(roundTrip(docs), filter), [{ $sort: sort }]);
        expect(json(all), `${json(filter)} ${json(sort)}`).toBe(json(reference));
        for (const [skip, limit] of pages) {
          const label = `${json(filter)} ${json(sort)} skip ${skip} limit ${limit}`;
          expect(json(await collection.find(filter, { sort, skip, limit })), label).toBe(json(all.slice(skip, skip + limit)));
        }
      }
    }
  });

  it('sorted pages over 20k documents', async () => {
    await store.ensureIndexes('big', [{ keys: { projectId: 1 } }]);
    const big = store.collection('big');
    const docs: Doc[] = [];
    for (let i = 0; i < 20_000; i++) docs.push({ _id: `e${(i * 7919) % 20_000}`, projectId: `p${i % 2}`, at: i % 1000 });
    await big.insertMany(docs);
    for (const sort of [{ _id: -1 }, { at: 1 }, { at: -1, _id: 1 }] as Record<string, 1 | -1>[]) {
      const all = await big.find({ projectId: 'p1' }, { sort });
      expect(json(await big.find({ projectId: 'p1' }, { sort, limit: 21 }))).toBe(json(all.slice(0, 21)));
      expect(json(await big.find({ projectId: 'p1' }, { sort, skip: 21, limit: 21 }))).toBe(json(all.slice(21, 42)));
    }
  });

  it('updates: $set/$unset/$inc/$min/$max without mingo equal mingo, including what it refuses', async () => {
    const base = {
      projectId: 'p1',
      email: 'a@x',
      subscribed: true,
      n: 5,
      s: 'm',
      huge: 1.7e308,
      data: { plan: 'free', amount: 3, nested: { x: 1 } },
      list: [1, 2, { a: 1 }],
      nil: null,
      eventStats: { open: { count: 1, first: '2024-01-02', last: '2024-01-02' } },
    };
    const withConstructor = { ...base, constructor: { name: 'Foo' }, inner: { constructor: 'x', y: 1 } };
    const cases: [Record<string, unknown>, Update][] = [
      [base, { $set: { s: 'm' } }],
      [base, { $set: { s: 'n', subscribed: false } }],
      [base, { $set: { data: { nested: { x: 1 }, amount: 3, plan: 'free' } } }], // equal in another key order: no change
      [base, { $set: { data: { plan: 'pro' } } }],
      [base, { $set: { 'data.plan': 'pro', 'data.new': [1, { b: null }], 'data.nested.y': 'z' } }],
      [base, { $set: { 'brand.new.path': 1, brand2: {} } }],
      [base, { $set: { 'nil.x': 1 } }],
      [base, { $set: { 's.x': 1 } }],
      [base, { $set: { 'list.0': 9 } }],
      [base, { $set: { 'list.2.a': 2 } }],
      [base, { $set: { when: new Date(0) } }],
      [base, { $set: { u: undefined } }],
      [base, { $set: { x: { y: undefined, z: 1 } } }],
      [base, { $set: { big: Infinity } }],
      [base, { $set: { z: -0, n: -0 } }],
      [base, { $set: { list: [1, 2, { a: 1 }] } }],
      [base, { $set: { list: [2, 1, { a: 1 }] } }],
      [base, { $set: {} }],
      [base, { $set: { 'data.constructor': 'x' } }],
      [base, { $set: { obj: { constructor: 'x' } } }],
      [base, { $unset: { s: '' } }],
      [base, { $unset: { missing: '' } }],
      [base, { $unset: { 'data.plan': '', 'nope.x': '' } }],
      [base, { $unset: { 'nil.x': 1 } }],
      [base, { $unset: { 'list.0': '' } }],
      [base, { $inc: { n: 1 } }],
      [base, { $inc: { n: 0 } }],
      [base, { $inc: { fresh: 0 } }],
      [base, { $inc: { 'data.amount': -3, 'eventStats.open.count': 1, 'eventStats.click.count': 1 } }],
      [base, { $inc: { s: 1 } }],
      [base, { $inc: { nil: 1 } }],
      [base, { $inc: { n: 'x' } }],
      [base, { $inc: { n: Infinity } }],
      [base, { $inc: { huge: 1e308 } }],
      [base, { $inc: { n: 0.25, 'list.1': 1 } }],
      [base, { $min: { n: 3 } }],
      [base, { $min: { n: 7 } }],
      [base, { $min: { n: 5 } }],
      [base, { $min: { s: 'a' } }],
      [base, { $min: { s: 'z' } }],
      [base, { $min: { n: 'a' } }],
      [base, { $min: { fresh: 1, 'deep.fresh': 'x' } }],
      [base, { $min: { nil: 1 } }],
      [base, { $min: { n: -0 } }],
      [base, { $max: { 'eventStats.open.last': '2024-02-01' } }],
      [base, { $max: { 'eventStats.open.first': '2023-01-01' } }],
      [base, { $max: { n: -0, s: 5 } }],
      [base, { $max: { fresh: -0 } }],
      [base, { $max: { n: null } }],
      [
        base,
        {
          $set: { email: 'b@x', subscribed: true, data: { plan: 'pro', amount: 3 }, updatedAt: '2024-03-01' },
          $inc: { 'eventStats.open.count': 1, 'eventStats.signup.count': 1 },
          $min: { 'eventStats.open.first': '2024-03-01', 'eventStats.signup.first': '2024-03-01' },
          $max: { 'eventStats.open.last': '2024-03-01', 'eventStats.signup.last': '2024-03-01' },
        },
      ],
      [base, { $set: { n: 1 }, $setOnInsert: { never: true } }],
      [base, { $set: { _id: 'other' } }],
      [base, { $inc: { '_id.x': 1 } }],
      [base, { $set: { a: 1 }, $inc: { 'a.b': 1 } }],
      [base, { $set: { a: 1 }, $unset: { a: '' } }],
      [base, { $set: { 'data.b': 1 }, $unset: { data: '' } }],
      [base, { $inc: { 'x.y': 1 }, $set: { x: { z: 1 } } }],
      [base, { $inc: { n: 1 }, $max: { n: 100 } }],
      [base, { $set: { data2: 1, 'data.plan': 'x' } }],
      [base, { $set: { 'a.b': 1, 'a.c': 2 } }],
      [base, { $set: { $bad: 1 } }],
      [base, { $set: { 'a..b': 1 } }],
      [base, { $set: { constructor: 1 } }],
      [base, { $set: { __proto__: { polluted: true } } as Record<string, unknown> }],
      [base, { $push: { list: 3 } }],
      [base, { $set: 5 }],
      [base, { $bogus: { n: 1 } }],
      [withConstructor, { $set: { s: 'n' } }],
      [withConstructor, { $set: { 'inner.y': 2 } }],
    ];
    const updates = store.collection('updates');
    const expectedJson = new Map<string, string>();
    for (const [i, [doc, update]] of cases.entries()) {
      const label = `case ${i}: ${json(update)}`;
      const _id = `u${i}`;
      const before = roundTrip({ _id, ...doc });
      await updates.insertOne(before);
      const { $setOnInsert: _ignored, ...operators } = update;
      const working = roundTrip(before);
      let expected: { modified: number; json: string } | { error: string };
      try {
        const changed = mingoUpdate(working, operators, undefined, undefined, { cloneMode: 'none' });
        expected = { modified: changed.length ? 1 : 0, json: json(changed.length ? working : before) };
      } catch (err) {
        expected = { error: (err as Error).message };
      }
      if ('error' in expected) {
        await expect(updates.updateOne({ _id }, update), label).rejects.toThrow(expected.error);
        expectedJson.set(_id, json(before));
      } else {
        expect(await updates.updateOne({ _id }, update), label).toEqual({ matched: 1, modified: expected.modified });
        expectedJson.set(_id, expected.json);
      }
      expect(json(await updates.findOne({ _id })), label).toBe(expectedJson.get(_id));
      // The version handed out before the update was not touched by the update.
      expect(json(before), label).toBe(json(roundTrip({ _id, ...doc })));
    }
    // The journal holds exactly what memory held.
    await reopen();
    for (const [_id, text] of expectedJson) expect(json(await store.collection('updates').findOne({ _id })), _id).toBe(text);
  });

  it('an update never modifies the previous version of a document (shared subtrees)', async () => {
    await contacts.insertOne(contact('a', { data: { plan: 'free', deep: { x: 1 } }, tags: ['t'] }));
    const v1 = await contacts.findOneAndUpdate({ _id: 'a' }, { $set: { 'data.plan': 'pro' } }, { returnDocument: 'before' });
    const v2 = await contacts.findOneAndUpdate({ _id: 'a' }, { $inc: { 'data.deep.x': 1 } }, { returnDocument: 'before' });
    const v3 = await contacts.findOneAndUpdate({ _id: 'a' }, { $set: { 'data.deep.y': 2 }, $unset: { 'data.plan': '' } });
    expect(v1!.data).toEqual({ plan: 'free', deep: { x: 1 } });
    expect(v2!.data).toEqual({ plan: 'pro', deep: { x: 1 } });
    expect(v3!.data).toEqual({ deep: { x: 2, y: 2 } });
    (v3!.data as { deep: { x: number } }).deep.x = 99;
    expect(await contacts.findOne({ _id: 'a' })).toMatchObject({ data: { deep: { x: 2, y: 2 } }, tags: ['t'] });
  });

  it('copies handed out are plain JSON copies, own __proto__ keys included', async () => {
    const doc = JSON.parse('{"_id":"p","projectId":"p1","email":"p@x","data":{"__proto__":{"x":1},"list":[1,{"a":[2]}]}}') as Contact;
    await contacts.insertOne(doc);
    const found = (await contacts.findOne({ _id: 'p' }))!;
    expect(json(found)).toBe(json(doc));
    expect(Object.hasOwn(found.data!, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(found.data)).toBe(Object.prototype);
    expect(json(await contacts.findOneAndUpdate({ _id: 'p' }, { $set: { name: 'P' } }))).toBe(json({ ...doc, name: 'P' }));
  });
});
