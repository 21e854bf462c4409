import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../adapters/sqlite/store.ts';
import { ensureContactIndexes } from '../../domain/contacts/collection.ts';
import { listContacts } from '../../domain/contacts/service.ts';
import type { Platform } from '../../runtime/platform.ts';

// The Contacts screen's subscribed filter (GET /contacts?subscribed=) reads a page newest first and
// counts the filtered list: both must walk an index of the project's (un)subscribed contacts, not
// every contact of the project. Checked on the SQL the embedded store runs, with EXPLAIN QUERY PLAN.

let dir: string;
let store: SqliteStore;

beforeEach(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-contact-indexes-'));
  store = await SqliteStore.open(path.join(dir, 'mailroom.db'));
  await ensureContactIndexes(store);
  const at = new Date().toISOString();
  for (let i = 0; i < 30; i++) {
    await store.collection('contacts').insertOne({
      _id: `0190a0b0-0000-7000-8000-${String(i).padStart(12, '0')}`,
      projectId: i % 2 ? 'p1' : 'p2',
      email: `c${i}@example.com`,
      subscribed: i % 3 === 0,
      data: {},
      createdAt: at,
      updatedAt: at,
    });
  }
});

afterEach(async () => {
  await store.close();
  await fs.promises.rm(dir, { recursive: true, force: true });
});

/** The query plans of the statements `work` runs on the store's connection, one line per step. */
async function plansOf(work: () => Promise<unknown>): Promise<string[]> {
  const db = store.database;
  const original = db.statement.bind(db);
  const sqls: string[] = [];
  db.statement = (sql: string) => {
    const statement = original(sql);
    if (/^\s*SELECT/i.test(sql) && sql.includes('"contacts"')) sqls.push(sql);
    return statement;
  };
  try {
    await work();
  } finally {
    db.statement = original;
  }
  // Parameters do not change a plan: every one bound to null.
  return sqls.map((sql) => {
    const statement = db.sqlite.prepare(`EXPLAIN QUERY PLAN ${sql}`);
    const n = (sql.match(/\?\d*/g) ?? []).reduce((max, p) => Math.max(max, p.length > 1 ? Number(p.slice(1)) : 0), 0) || (sql.match(/\?/g) ?? []).length;
    const rows = statement.all(...Array<null>(n).fill(null)) as { detail: string }[];
    return rows.map((r) => r.detail).join(' | ');
  });
}

describe('the contacts list filtered by subscription', () => {
  it('pages and counts on the {projectId, subscribed} index, in id order, with no sort of its own', async () => {
    const p = { store } as unknown as Platform;
    let page: Awaited<ReturnType<typeof listContacts>> | undefined;
    const plans = await plansOf(async () => (page = await listContacts(p, 'p1', { limit: 5, subscribed: false })));
    expect(page!.total).toBe(10);
    expect(page!.contacts.every((c) => !c.subscribed)).toBe(true);
    expect(plans.length).toBeGreaterThan(0);
    for (const plan of plans) {
      expect(plan).toContain('contacts:projectId,subscribed,_id');
      expect(plan).not.toContain('TEMP B-TREE');
    }
  });
});

describe('an indexed field holding booleans (the embedded store)', () => {
  it('matches a boolean only by a boolean, and sorts booleans after numbers and strings, as MongoDB does', async () => {
    const mixed = store.collection('mixed');
    await store.ensureIndexes('mixed', [{ keys: { f: 1 } }]);
    const values: unknown[] = [true, 1, 'a', false, 0, null];
    for (const [i, f] of values.entries()) await mixed.insertOne({ _id: `m${i}`, f });
    const fOf = async (filter: Record<string, unknown>, sort?: Record<string, 1 | -1>) => (await mixed.find(filter, sort ? { sort } : {})).map((d) => d.f);
    expect(await fOf({ f: true })).toEqual([true]);
    expect(await fOf({ f: { $eq: false } })).toEqual([false]);
    expect(await fOf({ f: 1 })).toEqual([1]);
    expect(await fOf({ f: 0 })).toEqual([0]);
    expect(await mixed.countDocuments({ f: false })).toBe(1);
    expect(await fOf({}, { f: 1 })).toEqual([null, 0, 1, 'a', false, true]);
    expect(await fOf({ f: { $gte: 0 } })).toEqual([1, 0]);
    await mixed.updateOne({ _id: 'm0' }, { $set: { f: false } });
    expect((await mixed.find({ f: false })).map((d) => d._id)).toEqual(['m0', 'm3']);
  });
});

describe('an indexed boolean inside $and, $or and $ne (the expression reads its column)', () => {
  it('answers as MongoDB does', async () => {
    const mixed = store.collection('nested');
    await store.ensureIndexes('nested', [{ keys: { f: 1 } }]);
    const values: unknown[] = [true, 1, 'a', false, 0, null];
    for (const [i, f] of values.entries()) await mixed.insertOne({ _id: `n${i}`, f, g: i % 2 });
    const fOf = async (filter: Record<string, unknown>) => (await mixed.find(filter)).map((d) => d.f);
    expect(await fOf({ $and: [{ f: true }, { g: 0 }] })).toEqual([true]);
    expect(await fOf({ $or: [{ f: false }, { f: 1 }] })).toEqual([1, false]);
    expect(await fOf({ f: { $ne: true } })).toEqual([1, 'a', false, 0, null]);
    expect(await fOf({ f: { $in: [true, 0] } })).toEqual([true, 0]);
    expect(await fOf({ f: { $type: 'bool' } })).toEqual([true, false]);
    expect(await mixed.countDocuments({ $and: [{ f: true }] })).toBe(1);
  });
});
