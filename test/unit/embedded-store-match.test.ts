// The embedded store's compiled filters decide a document only where mingo would decide it the
// same way, and the store's answers stay mingo's on documents of every shape.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Query } from 'mingo';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { openStore } from '../harness/store.ts';
import { UNDECIDED, compileFilter } from '../../adapters/embedded/store-match.ts';
import { compileCondition } from '../../domain/segments/filter.ts';
import type { Filter } from '../../ports/store.ts';
import { mulberry32 } from '../harness/prng.ts';

const VALUES: unknown[] = [undefined, null, 0, 1, 5, -2.5, 100, '', 'a', 'B', 'x', '5', 'true', 'Gmail.com', '2026-01-01T00:00:00.000Z', '2025-06-01T00:00:00.000Z', true, false, { b: 1 }, { b: 'x' }, [], [1, 6], ['x', 'a'], [{ b: 1 }, { b: 7 }], [null]];
const OPERANDS: unknown[] = [null, 0, 1, 5, -2.5, '', 'a', 'x', '5', 'true', '2025-12-01T00:00:00.000Z', true, false];

function randomDoc(rnd: () => number, i: number): { _id: string; [key: string]: unknown } {
  const doc: { _id: string; [key: string]: unknown } = { _id: `d${i}` };
  const pick = () => VALUES[Math.floor(rnd() * VALUES.length)];
  for (const key of ['a', 'c']) {
    const v = pick();
    if (v !== undefined) doc[key] = v;
  }
  if (rnd() < 0.6) {
    const inner: Record<string, unknown> = {};
    for (const key of ['b', 'n']) {
      const v = pick();
      if (v !== undefined) inner[key] = v;
    }
    doc.o = rnd() < 0.9 ? inner : pick();
  }
  return doc;
}

function randomCondition(rnd: () => number, depth = 0): unknown {
  const operand = () => OPERANDS[Math.floor(rnd() * OPERANDS.length)];
  const r = rnd();
  if (r < 0.15) return operand();
  const ops = ['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$exists', '$regex', '$not'];
  const op = ops[Math.floor(rnd() * ops.length)];
  switch (op) {
    case '$in':
      return { $in: [operand(), operand()] };
    case '$exists':
      return { $exists: rnd() < 0.5 };
    case '$regex':
      return rnd() < 0.5 ? { $regex: 'a', $options: 'i' } : { $regex: '^x' };
    case '$not':
      return depth > 1 ? { $exists: true } : { $not: randomCondition(rnd, depth + 1) };
    default: {
      const o = operand();
      // $gt and friends with null/boolean are left to mingo by compileFilter; keep them to test that.
      return { [op]: o };
    }
  }
}

function randomFilter(rnd: () => number, depth = 0): Filter {
  const fields = ['a', 'c', 'o.b', 'o.n', 'o'];
  const r = rnd();
  if (depth < 2 && r < 0.25) {
    const n = 1 + Math.floor(rnd() * 3);
    return { [rnd() < 0.5 ? '$and' : '$or']: Array.from({ length: n }, () => randomFilter(rnd, depth + 1)) };
  }
  const filter: Filter = {};
  const n = 1 + Math.floor(rnd() * 2);
  for (let i = 0; i < n; i++) {
    const cond = randomCondition(rnd);
    // $not at the top of a field needs an operator object, as in MongoDB.
    if (cond && typeof cond === 'object' && '$not' in cond && (typeof cond.$not !== 'object' || cond.$not === null)) continue;
    filter[fields[Math.floor(rnd() * fields.length)]] = cond;
  }
  return filter;
}

describe('compiled filters (store-match.ts)', () => {
  it('decide a document only as mingo decides it, over random documents and filters', () => {
    const rnd = mulberry32(42);
    const docs = Array.from({ length: 300 }, (_, i) => randomDoc(rnd, i));
    let decided = 0;
    let checked = 0;
    for (let f = 0; f < 1500; f++) {
      const filter = randomFilter(rnd);
      let query: Query;
      try {
        query = new Query(filter);
      } catch {
        continue; // a filter mingo refuses; the store never compiles it either
      }
      const compiled = compileFilter(filter);
      if (!compiled) continue;
      for (const doc of docs) {
        let expected: boolean;
        try {
          expected = query.test(doc);
        } catch {
          continue;
        }
        const answer = compiled(doc);
        checked++;
        if (answer === UNDECIDED) continue;
        decided++;
        if ((answer === 1) !== expected) throw new Error(`${JSON.stringify(filter)} on ${JSON.stringify(doc)}: compiled ${answer}, mingo ${expected}`);
      }
    }
    // The subset is what matters: most answers are decided without mingo.
    expect(checked).toBeGreaterThan(100_000);
    expect(decided / checked).toBeGreaterThan(0.6);
  });

  it('leave what they do not know to mingo: $expr, $elemMatch, $size, regex objects, array operands', () => {
    for (const filter of [{ $expr: { $gt: ['$a', 1] } }, { a: { $elemMatch: { b: 1 } } }, { a: { $size: 2 } }, { a: /x/ }, { a: { $in: [[1]] } }, { 'a.0': 1 }, { a: { $eq: { b: 1 } } }]) {
      expect(compileFilter(filter as Filter)).toBeUndefined();
    }
  });
});

describe('the embedded store with compiled filters', () => {
  let dir: string;
  let store: SqliteStore;
  beforeEach(async () => {
    dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-match-'));
    store = await openStore(dir);
  });
  afterEach(async () => {
    await store.close();
    await fs.promises.rm(dir, { recursive: true, force: true });
  });

  it('counts and finds exactly what mingo finds, for segment filters and random ones, on documents of every shape', async () => {
    const rnd = mulberry32(7);
    const docs = Array.from({ length: 400 }, (_, i) => {
      const doc = randomDoc(rnd, i);
      return {
        ...doc,
        projectId: i % 3 === 0 ? 'p2' : 'p1',
        email: `user${i}@${i % 2 ? 'gmail.com' : 'shop.example'}`,
        subscribed: i % 5 !== 0,
        data: { plan: ['pro', 'free', 5, true][i % 4], spent: i % 7 === 0 ? 'lots' : i * 3, since: `2026-0${1 + (i % 9)}-01T00:00:00.000Z` },
        eventStats: i % 4 === 0 ? {} : { purchase: { count: i % 6, first: '2026-01-01T00:00:00.000Z', last: `2026-0${1 + (i % 9)}-15T00:00:00.000Z` } },
      };
    });
    await store.ensureIndexes('c', [{ keys: { projectId: 1 } }]);
    await store.collection('c').insertMany(docs);
    const now = new Date('2026-09-30T00:00:00Z');
    const f = (field: string, operator: string, value?: unknown, unit?: string) => ({ field, operator, ...(value !== undefined ? { value } : {}), ...(unit ? { unit } : {}) });
    const conditions = [
      [f('data.plan', 'equals', 'pro')],
      [f('data.plan', 'notEquals', 'pro'), f('subscribed', 'equals', true)],
      [f('data.spent', 'greaterThan', 300)],
      [f('data.spent', 'lessThanOrEqual', 90)],
      [f('event.purchase', 'triggeredWithin', 60, 'days')],
      [f('event.purchase', 'notTriggered')],
      [f('event.purchase', 'lessThan', 3)],
      [f('email', 'contains', 'GMAIL')],
      [f('email', 'notContains', 'gmail')],
      [f('data.since', 'olderThan', 100, 'days')],
      [f('data.spent', 'exists')],
      [f('data.missing', 'notExists')],
    ].map((filters) => compileCondition({ logic: 'AND', groups: [{ filters }] }, { now, types: { plan: 'string', spent: 'number', since: 'date' }, strictTypes: false }));
    const orCondition = compileCondition(
      { logic: 'OR', groups: [{ filters: [f('data.plan', 'equals', 'free'), f('event.purchase', 'greaterThanOrEqual', 2)] }, { filters: [f('email', 'contains', 'gmail')] }] },
      { now, types: { plan: 'string' } },
    );
    const rand = mulberry32(99);
    const filters: Filter[] = [...conditions, orCondition, ...Array.from({ length: 200 }, () => randomFilter(rand))];
    for (const condition of filters) {
      for (const filter of [condition, { projectId: 'p1', ...condition }]) {
        let expected: typeof docs;
        try {
          expected = docs.filter((d) => new Query(filter).test(d));
        } catch {
          continue;
        }
        const c = store.collection('c');
        expect(await c.countDocuments(filter), JSON.stringify(filter)).toBe(expected.length);
        const page = await c.find(filter, { sort: { _id: -1 }, limit: 5 });
        expect(page.map((d) => d._id), JSON.stringify(filter)).toEqual(
          expected
            .map((d) => d._id)
            .sort()
            .reverse()
            .slice(0, 5),
        );
      }
    }
  });

  it('finds by id with equalities beside it exactly as mingo does, arrays, objects and missing fields included', async () => {
    const rnd = mulberry32(11);
    const docs = Array.from({ length: 60 }, (_, i) => randomDoc(rnd, i));
    const c = store.collection('c');
    await c.insertMany(docs.map((d) => structuredClone(d)));
    for (const doc of docs) {
      for (const operand of [...OPERANDS, 6]) {
        for (const filter of [{ _id: doc._id, a: operand }, { _id: doc._id, a: operand, c: doc.c ?? 1 }]) {
          const expected = new Query(filter as Filter).test(doc) ? [doc._id] : [];
          expect((await c.find(filter as Filter)).map((d) => d._id), JSON.stringify(filter)).toEqual(expected);
          const updated = await c.updateOne(filter as Filter, { $set: { touched: true } });
          expect(updated.matched, JSON.stringify(filter)).toBe(expected.length);
        }
      }
    }
  });

  it("answers the total next to a page from the page's own scan, and never a stale one after a write", async () => {
    const c = store.collection('c');
    await store.ensureIndexes('c', [{ keys: { projectId: 1 } }]);
    await c.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: `k${String(i).padStart(3, '0')}`, projectId: 'p', n: i, email: `u${i}@x.example` })));
    const filter = { projectId: 'p', n: { $gte: 10 } };
    expect((await c.find(filter, { sort: { _id: -1 }, limit: 5 })).map((d) => d._id)).toEqual(['k049', 'k048', 'k047', 'k046', 'k045']);
    expect(await c.countDocuments(filter)).toBe(40);
    await c.insertOne({ _id: 'k100', projectId: 'p', n: 99 });
    expect(await c.countDocuments(filter)).toBe(41);
    await c.updateOne({ _id: 'k020' }, { $set: { n: 1 } });
    expect(await c.countDocuments(filter)).toBe(40);
    await c.deleteOne({ _id: 'k100' });
    expect(await c.countDocuments({ projectId: 'p', n: { $gte: 10 } })).toBe(39);
    // Filters JSON cannot tell apart are never taken for one another.
    await c.find({ projectId: 'p', email: /u1/ }, { sort: { _id: -1 }, limit: 1 });
    expect(await c.countDocuments({ projectId: 'p', email: /u2/ })).toBe(1 + 10);
  });
});
