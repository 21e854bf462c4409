import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedStore } from '../../adapters/embedded/store.ts';
import { DuplicateKeyError, type Collection, type Doc } from '../../ports/store.ts';

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
let store: EmbeddedStore;
let contacts: Collection<Contact>;

beforeEach(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-store-'));
  store = await EmbeddedStore.open(dir);
  contacts = store.collection<Contact>('contacts');
});

afterEach(async () => {
  await store.close().catch(() => undefined);
  await fs.promises.rm(dir, { recursive: true, force: true });
});

const journalFile = () => path.join(dir, 'store.journal');
const journalLines = () => fs.readFileSync(journalFile(), 'utf8').split('\n').filter(Boolean);

async function reopen(options?: { compactAfter?: number }): Promise<void> {
  await store.close();
  store = await EmbeddedStore.open(dir, options);
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

  it('replaceOne replaces whole documents and upserts', async () => {
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

  it('indexes documents loaded from the journal and refuses an index the data violates', async () => {
    await reopen();
    await expect(contacts.insertOne(contact('c', { email: 'a@example.com' }))).resolves.toBeUndefined(); // no index yet
    await expect(store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }])).rejects.toBeInstanceOf(
      DuplicateKeyError,
    );
    await contacts.deleteOne({ _id: 'c' });
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }]);
    await expect(contacts.insertOne(contact('c', { email: 'b@example.com' }))).rejects.toBeInstanceOf(DuplicateKeyError);
    expect(await contacts.findOne({ projectId: 'p1', email: 'b@example.com' })).toMatchObject({ _id: 'b' });
  });
});

describe('queries', () => {
  beforeEach(async () => {
    await store.ensureIndexes('contacts', [{ keys: { projectId: 1 } }, { keys: { 'events.name': 1 } }]);
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

  it('ignores and truncates a torn last line', async () => {
    await contacts.insertMany([contact('a'), contact('b')]);
    await store.close();
    fs.appendFileSync(journalFile(), '{"c":"contacts","p":{"_id":"c","proj');
    store = await EmbeddedStore.open(dir);
    contacts = store.collection<Contact>('contacts');
    expect((await contacts.find({})).map((d) => d._id)).toEqual(['a', 'b']);
    expect(fs.readFileSync(journalFile(), 'utf8').endsWith('}\n')).toBe(true);
    await contacts.insertOne(contact('d'));
    await reopen();
    expect((await contacts.find({})).map((d) => d._id)).toEqual(['a', 'b', 'd']);
  });

  it('refuses a corrupt line in the middle', async () => {
    await contacts.insertOne(contact('a'));
    await store.close();
    fs.appendFileSync(journalFile(), 'garbage\n{"c":"contacts","d":"a"}\n');
    await expect(EmbeddedStore.open(dir)).rejects.toThrow(/corrupt/);
  });

  it('compacts to exactly the live documents, at runtime and at open', async () => {
    await reopen({ compactAfter: 10 });
    for (let i = 0; i < 8; i++) await contacts.insertOne(contact(`c${i}`, { n: 0 } as Partial<Contact>));
    for (let round = 1; round <= 3; round++) await contacts.updateMany({}, { $set: { n: round } });
    await contacts.deleteMany({ _id: { $in: ['c0', 'c1', 'c2'] } });
    await contacts.updateOne({ _id: 'c3' }, { $set: { n: 99 } });

    const live = await contacts.find({}, { sort: { _id: 1 } });
    expect(live).toHaveLength(5);
    // 8 inserts + 24 updates + 3 deletes + 1 update were written, far fewer lines remain.
    expect(journalLines().length).toBeLessThanOrEqual(10 + 8);
    expect(fs.existsSync(`${journalFile()}.tmp`)).toBe(false);
    await reopen({ compactAfter: 10 });
    expect(await contacts.find({}, { sort: { _id: 1 } })).toEqual(live);

    // Compaction at open: a long journal written with the default threshold is rewritten.
    await reopen();
    for (let i = 0; i < 20; i++) await contacts.updateOne({ _id: 'c4' }, { $inc: { n: 1 } });
    expect(journalLines().length).toBeGreaterThan(10);
    await reopen({ compactAfter: 10 });
    const lines = journalLines().map((line) => JSON.parse(line) as { p: Doc });
    expect(lines.map((line) => line.p._id).sort()).toEqual(live.map((d) => d._id));
    expect(await contacts.findOne({ _id: 'c4' })).toMatchObject({ n: 23 });
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
