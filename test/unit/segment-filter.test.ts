// The FilterCondition compiler: every operator on every field kind it applies to, the 422s, and the
// agreement of the compiled query (run by the embedded store) with matchesCondition.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Query } from 'mingo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { openStore } from '../harness/store.ts';
import { eventKey, type ContactDoc, type EventStat } from '../../domain/contacts/collection.ts';
import type { DataFieldTypes, DataType } from '../../domain/contacts/data-types.ts';
import { AppError } from '../../domain/errors.ts';
import { compileCondition, conditionMatcher, conditionWarnings, matchesCondition, type CompileOptions } from '../../domain/segments/filter.ts';
import { conditionQuery } from '../../domain/segments/query.ts';

const now = new Date('2025-06-15T12:00:00.000Z');
const ago = (ms: number) => new Date(now.getTime() - ms).toISOString();
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

const stat = (count: number, last: string, first = last): EventStat => ({ count, first, last });
const stats = (entries: Record<string, EventStat>) => Object.fromEntries(Object.entries(entries).map(([name, s]) => [eventKey(name), s]));

/** Four contacts that between them make every operator tell members from non-members. */
const contacts: ContactDoc[] = [
  {
    _id: 'ann',
    projectId: 'p1',
    email: 'ann@alpha.example',
    subscribed: true,
    createdAt: ago(30 * MIN),
    updatedAt: ago(5 * MIN),
    data: { plan: 'pro', age: 30, vip: true, renews: ago(6 * HOUR), code: 5 },
    eventStats: stats({
      purchase: stat(2, ago(2 * HOUR), ago(10 * DAY)),
      'email.open': stat(1, ago(3 * DAY)),
      'signup.completed': stat(1, ago(40 * DAY)),
    }),
  },
  {
    _id: 'bob',
    projectId: 'p1',
    email: 'bob@beta.example',
    subscribed: false,
    createdAt: ago(3 * DAY),
    updatedAt: ago(1 * DAY),
    data: { plan: 'free', age: 17, vip: false, renews: '2025-06-01T00:00:00.000Z', code: '5' },
    eventStats: stats({ purchase: stat(1, ago(20 * DAY)), 'email.click': stat(3, ago(30 * MIN)), 'email.bounce': stat(1, ago(1 * DAY)) }),
  },
  {
    _id: 'cat',
    projectId: 'p1',
    email: 'cat@alpha.example',
    subscribed: true,
    createdAt: ago(400 * DAY),
    updatedAt: ago(400 * DAY),
    data: { plan: 'Pro Plus', age: 45, renews: '2030-01-01T00:00:00.000Z', code: 'x5y' },
    eventStats: {},
  },
  {
    _id: 'dan',
    projectId: 'p1',
    email: 'dan.o+tag@gamma.example',
    subscribed: true,
    createdAt: ago(1 * MIN),
    updatedAt: ago(1 * MIN),
    data: {},
  },
];
const ALL = ['ann', 'bob', 'cat', 'dan'];

/** The project's data key types: `code` was seen as a number and as a string, so it reads as text. */
const types: DataFieldTypes = { plan: 'string', age: 'number', vip: 'boolean', renews: 'date', code: ['number', 'string'] };

let store: SqliteStore;
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'segment-filter-'));
  store = await openStore(dir);
  await store.ensureIndexes('contacts', [{ keys: { projectId: 1, email: 1 }, unique: true }, { keys: { projectId: 1 } }]);
  await store.collection<ContactDoc>('contacts').insertMany(contacts);
  // Another project's lookalike never matches: the segment query is scoped by projectId.
  await store.collection<ContactDoc>('contacts').insertOne({ ...contacts[0], _id: 'other', projectId: 'p2' });
});
afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

type F = { field: string; operator: string; value?: unknown; unit?: string };
const one = (f: F) => ({ logic: 'AND', groups: [{ filters: [f] }] });
const options = (extra: Partial<CompileOptions> = {}): CompileOptions => ({ now, types, ...extra });

/** The ids the store returns for the compiled condition, checked against matchesCondition per document. */
async function members(condition: unknown, extra: Partial<CompileOptions> = {}): Promise<string[]> {
  const opts = options(extra);
  if (opts.strictTypes !== false) compileCondition(condition, opts); // a segment with it can be saved
  // As the segment query runs it: lenient, with the numbers a mixed key holds read from the store.
  const filter = await conditionQuery(store, 'p1', condition, opts.now, opts.types);
  const found = await store.collection<ContactDoc>('contacts').find({ projectId: 'p1', ...filter });
  const ids = found.map((d) => d._id).sort();
  const decided = contacts.filter((doc) => matchesCondition(condition, doc, { now, types: extra.types ?? types })).map((d) => d._id);
  if (extra.strictTypes !== false) expect(decided.sort(), 'matchesCondition agrees with the query').toEqual(ids);
  return ids;
}

/** The field errors of a refused condition. */
function refusal(condition: unknown, extra: Partial<CompileOptions> = {}) {
  try {
    compileCondition(condition, options(extra));
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.code).toBe('VALIDATION_ERROR');
    expect(e.statusCode).toBe(422);
    return e.fieldErrors ?? [];
  }
  throw new Error(`expected a 422 for ${JSON.stringify(condition)}`);
}
const FILTER = 'condition.groups.0.filters.0';

type Case = [F, string[]];
const cases = (list: Case[]) => list.map(([f, ids]) => [`${f.operator} ${JSON.stringify(f.value ?? null)}${f.unit ? ` ${f.unit}` : ''}`, f, ids] as const);

describe('email', () => {
  it.each(
    cases([
      [{ field: 'email', operator: 'equals', value: ' ANN@Alpha.example ' }, ['ann']],
      [{ field: 'email', operator: 'notEquals', value: 'ann@alpha.example' }, ['bob', 'cat', 'dan']],
      [{ field: 'email', operator: 'contains', value: 'ALPHA' }, ['ann', 'cat']],
      [{ field: 'email', operator: 'contains', value: '.o+t' }, ['dan']],
      [{ field: 'email', operator: 'contains', value: 'l.h' }, []], // literal: as a regex it would match "alpha"
      [{ field: 'email', operator: 'notContains', value: 'alpha' }, ['bob', 'dan']],
      [{ field: 'email', operator: 'exists' }, ALL],
      [{ field: 'email', operator: 'notExists' }, []],
    ]),
  )('%s', async (_name, f, ids) => {
    expect(await members(one(f))).toEqual(ids);
  });

  it.each(['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'within', 'olderThan', 'triggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggered'])(
    'refuses %s on email with a 422 naming the filter',
    (operator) => {
      const errors = refusal(one({ field: 'email', operator, value: 1, unit: 'days' }));
      expect(errors).toEqual([{ field: FILTER, message: expect.stringContaining(`${operator} does not apply to email`), code: 'operator_not_applicable' }]);
    },
  );

  it('compares email with text only', () => {
    expect(refusal(one({ field: 'email', operator: 'equals', value: 5 }))[0].field).toBe(FILTER);
    expect(refusal(one({ field: 'email', operator: 'contains', value: true }))[0].field).toBe(FILTER);
    expect(refusal(one({ field: 'email', operator: 'contains', value: '' }))[0].field).toBe(FILTER);
  });
});

describe('subscribed', () => {
  it.each(
    cases([
      [{ field: 'subscribed', operator: 'equals', value: true }, ['ann', 'cat', 'dan']],
      [{ field: 'subscribed', operator: 'equals', value: false }, ['bob']],
      [{ field: 'subscribed', operator: 'equals', value: 'FALSE' }, ['bob']],
      [{ field: 'subscribed', operator: 'notEquals', value: true }, ['bob']],
      [{ field: 'subscribed', operator: 'notEquals', value: 'false' }, ['ann', 'cat', 'dan']],
      [{ field: 'subscribed', operator: 'exists' }, ALL],
      [{ field: 'subscribed', operator: 'notExists' }, []],
    ]),
  )('%s', async (_name, f, ids) => {
    expect(await members(one(f))).toEqual(ids);
  });

  it.each(['contains', 'notContains', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'within', 'olderThan', 'triggered', 'notTriggered'])(
    'refuses %s on a boolean field',
    (operator) => {
      expect(refusal(one({ field: 'subscribed', operator, value: 1, unit: 'days' }))).toEqual([
        { field: FILTER, message: expect.stringContaining(`${operator} does not apply to subscribed`), code: 'operator_not_applicable' },
      ]);
    },
  );

  it('compares subscribed with true or false only', () => {
    expect(refusal(one({ field: 'subscribed', operator: 'equals', value: 'yes' }))[0]).toMatchObject({ field: FILTER, code: 'invalid_value' });
    expect(refusal(one({ field: 'subscribed', operator: 'equals', value: 1 }))[0].field).toBe(FILTER);
  });
});

describe('createdAt and updatedAt', () => {
  const annCreated = contacts[0].createdAt;
  it.each(
    cases([
      [{ field: 'createdAt', operator: 'within', value: 1, unit: 'hours' }, ['ann', 'dan']],
      [{ field: 'createdAt', operator: 'within', value: 2, unit: 'minutes' }, ['dan']],
      [{ field: 'createdAt', operator: 'within', value: 30, unit: 'minutes' }, ['ann', 'dan']], // the boundary is inside
      [{ field: 'createdAt', operator: 'within', value: '7', unit: 'days' }, ['ann', 'bob', 'dan']],
      [{ field: 'createdAt', operator: 'olderThan', value: 1, unit: 'days' }, ['bob', 'cat']],
      [{ field: 'createdAt', operator: 'olderThan', value: 30, unit: 'minutes' }, ['bob', 'cat']], // ...and not older
      [{ field: 'createdAt', operator: 'olderThan', value: 0.5, unit: 'minutes' }, ALL],
      [{ field: 'createdAt', operator: 'greaterThan', value: '2025-06-01T00:00:00Z' }, ['ann', 'bob', 'dan']],
      [{ field: 'createdAt', operator: 'lessThan', value: '2025-06-01' }, ['cat']],
      [{ field: 'createdAt', operator: 'greaterThanOrEqual', value: annCreated }, ['ann', 'dan']],
      [{ field: 'createdAt', operator: 'lessThanOrEqual', value: annCreated }, ['ann', 'bob', 'cat']],
      [{ field: 'createdAt', operator: 'greaterThan', value: annCreated }, ['dan']],
      // An offset names the same instant as the stored UTC string.
      [{ field: 'createdAt', operator: 'equals', value: '2025-06-15T13:30:00+02:00' }, ['ann']],
      [{ field: 'createdAt', operator: 'notEquals', value: annCreated }, ['bob', 'cat', 'dan']],
      [{ field: 'createdAt', operator: 'exists' }, ALL],
      [{ field: 'createdAt', operator: 'notExists' }, []],
      [{ field: 'updatedAt', operator: 'within', value: 10, unit: 'minutes' }, ['ann', 'dan']],
      [{ field: 'updatedAt', operator: 'olderThan', value: 12, unit: 'hours' }, ['bob', 'cat']],
      [{ field: 'updatedAt', operator: 'lessThan', value: '2025-06-15T00:00:00.000Z' }, ['bob', 'cat']],
    ]),
  )('%s', async (_name, f, ids) => {
    expect(await members(one(f))).toEqual(ids);
  });

  it.each(['contains', 'notContains', 'triggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggered'])('refuses %s on createdAt', (operator) => {
    expect(refusal(one({ field: 'createdAt', operator, value: 1, unit: 'days' }))[0]).toMatchObject({ field: FILTER, code: 'operator_not_applicable' });
  });

  it.each([
    ['a number', { operator: 'greaterThan', value: 5 }],
    ['text that is no date', { operator: 'equals', value: 'yesterday' }],
    ['within without unit', { operator: 'within', value: 1 }],
    ['within with an unknown unit', { operator: 'within', value: 1, unit: 'weeks' }],
    ['within 0', { operator: 'within', value: 0, unit: 'days' }],
    ['within a negative amount', { operator: 'olderThan', value: -1, unit: 'days' }],
    ['within a non-number', { operator: 'within', value: 'soon', unit: 'days' }],
    ['within no value', { operator: 'within', unit: 'days' }],
    ['more than 100 years back', { operator: 'olderThan', value: 36_526, unit: 'days' }],
    ['a unit on a comparison', { operator: 'greaterThan', value: '2025-01-01', unit: 'days' }],
  ])('refuses %s', (_name, f) => {
    expect(refusal(one({ field: 'createdAt', ...f }))[0].field).toBe(FILTER);
  });
});

describe('data.<key>', () => {
  describe('a text key', () => {
    it.each(
      cases([
        [{ field: 'data.plan', operator: 'equals', value: 'pro' }, ['ann']], // exact, case-sensitive
        [{ field: 'data.plan', operator: 'equals', value: 'PRO' }, []],
        [{ field: 'data.plan', operator: 'notEquals', value: 'pro' }, ['bob', 'cat', 'dan']], // a contact without the key is included
        [{ field: 'data.plan', operator: 'contains', value: 'PRO' }, ['ann', 'cat']],
        [{ field: 'data.plan', operator: 'notContains', value: 'pro' }, ['bob', 'dan']],
        [{ field: 'data.plan', operator: 'exists' }, ['ann', 'bob', 'cat']],
        [{ field: 'data.plan', operator: 'notExists' }, ['dan']],
      ]),
    )('%s', async (_name, f, ids) => {
      expect(await members(one(f))).toEqual(ids);
    });

    it.each([
      ['greaterThan', 5],
      ['lessThanOrEqual', '2025-01-01'],
      ['within', 1],
      ['olderThan', 1],
    ])('refuses %s on it (type mismatch), and it matches no one once saved', async (operator, value) => {
      const condition = one({ field: 'data.plan', operator, value, ...(operator === 'within' || operator === 'olderThan' ? { unit: 'days' } : {}) });
      expect(refusal(condition)).toEqual([{ field: FILTER, message: expect.stringContaining('data.plan holds text'), code: 'type_mismatch' }]);
      expect(await members(condition, { strictTypes: false })).toEqual([]);
    });
  });

  describe('a number key', () => {
    it.each(
      cases([
        [{ field: 'data.age', operator: 'equals', value: 30 }, ['ann']],
        [{ field: 'data.age', operator: 'equals', value: '30' }, ['ann']],
        [{ field: 'data.age', operator: 'equals', value: '30.0' }, ['ann']],
        [{ field: 'data.age', operator: 'notEquals', value: 30 }, ['bob', 'cat', 'dan']],
        [{ field: 'data.age', operator: 'greaterThan', value: 18 }, ['ann', 'cat']],
        [{ field: 'data.age', operator: 'greaterThan', value: '17.5' }, ['ann', 'cat']],
        [{ field: 'data.age', operator: 'lessThan', value: 18 }, ['bob']],
        [{ field: 'data.age', operator: 'greaterThanOrEqual', value: 30 }, ['ann', 'cat']],
        [{ field: 'data.age', operator: 'lessThanOrEqual', value: 30 }, ['ann', 'bob']],
        [{ field: 'data.age', operator: 'exists' }, ['ann', 'bob', 'cat']],
        [{ field: 'data.age', operator: 'notExists' }, ['dan']],
      ]),
    )('%s', async (_name, f, ids) => {
      expect(await members(one(f))).toEqual(ids);
    });

    it.each([
      [{ operator: 'equals', value: 'thirty' }, []],
      [{ operator: 'notEquals', value: 'thirty' }, ALL],
      [{ operator: 'contains', value: 3 }, []],
      [{ operator: 'notContains', value: 3 }, ALL],
      [{ operator: 'greaterThan', value: '2025-01-01' }, []],
      [{ operator: 'within', value: 1, unit: 'days' }, []],
    ])('refuses %j (type mismatch); saved, it holds for %j', async (f, ids) => {
      const condition = one({ field: 'data.age', ...f });
      expect(refusal(condition)).toEqual([{ field: FILTER, message: expect.stringContaining('data.age holds numbers'), code: 'type_mismatch' }]);
      expect(await members(condition, { strictTypes: false })).toEqual(ids);
    });
  });

  describe('a boolean key', () => {
    it.each(
      cases([
        [{ field: 'data.vip', operator: 'equals', value: true }, ['ann']],
        [{ field: 'data.vip', operator: 'equals', value: 'false' }, ['bob']],
        [{ field: 'data.vip', operator: 'notEquals', value: true }, ['bob', 'cat', 'dan']],
        [{ field: 'data.vip', operator: 'exists' }, ['ann', 'bob']],
        [{ field: 'data.vip', operator: 'notExists' }, ['cat', 'dan']],
      ]),
    )('%s', async (_name, f, ids) => {
      expect(await members(one(f))).toEqual(ids);
    });

    it.each(['greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'contains', 'notContains'])('refuses %s on it', (operator) => {
      expect(refusal(one({ field: 'data.vip', operator, value: 1 }))).toEqual([
        { field: FILTER, message: expect.stringContaining('data.vip holds booleans'), code: 'type_mismatch' },
      ]);
    });

    it('refuses a value that is not true or false', () => {
      expect(refusal(one({ field: 'data.vip', operator: 'equals', value: 'yes' }))[0]).toMatchObject({ field: FILTER, code: 'type_mismatch' });
    });
  });

  describe('a date key (ISO strings, compared as strings)', () => {
    it.each(
      cases([
        [{ field: 'data.renews', operator: 'within', value: 1, unit: 'days' }, ['ann']], // a future date is not "within the last"
        [{ field: 'data.renews', operator: 'within', value: 30, unit: 'days' }, ['ann', 'bob']],
        [{ field: 'data.renews', operator: 'olderThan', value: 1, unit: 'days' }, ['bob']],
        [{ field: 'data.renews', operator: 'olderThan', value: 1, unit: 'hours' }, ['ann', 'bob']],
        [{ field: 'data.renews', operator: 'greaterThan', value: '2025-06-10T00:00:00.000Z' }, ['ann', 'cat']],
        [{ field: 'data.renews', operator: 'lessThan', value: '2025-06-10' }, ['bob']],
        [{ field: 'data.renews', operator: 'greaterThanOrEqual', value: '2025-06-01T00:00:00.000Z' }, ['ann', 'bob', 'cat']],
        [{ field: 'data.renews', operator: 'lessThanOrEqual', value: '2025-06-01T00:00:00.000Z' }, ['bob']],
        [{ field: 'data.renews', operator: 'equals', value: '2030-01-01T00:00:00.000Z' }, ['cat']],
        [{ field: 'data.renews', operator: 'notEquals', value: '2030-01-01T00:00:00.000Z' }, ['ann', 'bob', 'dan']],
        [{ field: 'data.renews', operator: 'contains', value: '2030-' }, ['cat']],
        [{ field: 'data.renews', operator: 'notContains', value: '2025' }, ['cat', 'dan']],
        [{ field: 'data.renews', operator: 'exists' }, ['ann', 'bob', 'cat']],
        [{ field: 'data.renews', operator: 'notExists' }, ['dan']],
      ]),
    )('%s', async (_name, f, ids) => {
      expect(await members(one(f))).toEqual(ids);
    });

    it('refuses a number comparison on it', () => {
      expect(refusal(one({ field: 'data.renews', operator: 'greaterThan', value: 5 }))[0]).toMatchObject({ field: FILTER, code: 'type_mismatch' });
      expect(refusal(one({ field: 'data.renews', operator: 'equals', value: 5 }))[0]).toMatchObject({ field: FILTER, code: 'type_mismatch' });
    });
  });

  describe('a mixed key (seen as 5 and "5"): read as text', () => {
    it.each(
      cases([
        [{ field: 'data.code', operator: 'equals', value: '5' }, ['ann', 'bob']],
        [{ field: 'data.code', operator: 'equals', value: 5 }, ['ann', 'bob']],
        [{ field: 'data.code', operator: 'equals', value: '5.0' }, []], // the text "5.0" is not the text "5"
        [{ field: 'data.code', operator: 'notEquals', value: 5 }, ['cat', 'dan']],
        // Every value is searched as its text: the number 5 is "5".
        [{ field: 'data.code', operator: 'contains', value: '5' }, ['ann', 'bob', 'cat']],
        [{ field: 'data.code', operator: 'notContains', value: '5' }, ['dan']],
        [{ field: 'data.code', operator: 'notContains', value: 'x' }, ['ann', 'bob', 'dan']],
        [{ field: 'data.code', operator: 'exists' }, ['ann', 'bob', 'cat']],
      ]),
    )('%s', async (_name, f, ids) => {
      expect(await members(one(f))).toEqual(ids);
    });

    it('refuses number comparisons on it', () => {
      expect(refusal(one({ field: 'data.code', operator: 'greaterThan', value: 4 }))[0]).toMatchObject({ field: FILTER, code: 'type_mismatch' });
    });

    it('searches numbers and booleans by their text, in the query and for one document alike', () => {
      const docs = [5, 10, 15, 'abc', true].map((score, i) => ({ ...contacts[3], _id: `s${i}`, data: { score } }));
      const scoreTypes = { score: ['number', 'string', 'boolean'] as DataType[] };
      const matching = (operator: string, value: string) => {
        const condition = one({ field: 'data.score', operator, value });
        // The query lists the key's numbers whose text matches; one document is its own list.
        const query = compileCondition(condition, { now, types: scoreTypes, numbers: { score: [5, 10, 15] }, strictTypes: false });
        const viaQuery = docs.filter((d) => new Query(query).test(d)).map((d) => d.data.score);
        const oneByOne = docs.filter(conditionMatcher(condition, { now, types: scoreTypes })).map((d) => d.data.score);
        expect(oneByOne, 'one document is decided as the query decides it').toEqual(viaQuery);
        return { query, members: viaQuery };
      };
      expect(matching('contains', '1')).toEqual({
        query: { $or: [{ 'data.score': { $regex: '1', $options: 'i' } }, { 'data.score': { $in: [10, 15] } }] },
        members: [10, 15],
      });
      expect(matching('notContains', '1').members).toEqual([5, 'abc', true]);
      expect(matching('contains', 'RU').members).toEqual([true]);
      expect(matching('contains', 'ab').members).toEqual(['abc']);
    });

    it('says how a saved condition reads a mixed key: as text, or matching no contact', () => {
      const condition = {
        logic: 'OR',
        groups: [
          { filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }, { field: 'data.code', operator: 'contains', value: '5' }] },
          { filters: [{ field: 'data.code', operator: 'greaterThan', value: 4 }, { field: 'data.code', operator: 'exists' }] },
        ],
      };
      expect(conditionWarnings(condition, { now, types })).toEqual([
        {
          code: 'mixed_types',
          field: 'data.code',
          filter: 'condition.groups.0.filters.1',
          types: ['number', 'string'],
          message: 'data.code holds number and string values across contacts, so this filter compares each value as text (5 as "5", true as "true")',
        },
        {
          code: 'mixed_types',
          field: 'data.code',
          filter: 'condition.groups.1.filters.0',
          types: ['number', 'string'],
          message: 'data.code holds number and string values, read as text; greaterThan compares numbers only, so this filter matches no contact',
        },
      ]);
      expect(conditionWarnings(one({ field: 'data.age', operator: 'greaterThan', value: 4 }), { now, types })).toEqual([]);
    });

    it('equals "true" matches the boolean true and the text "true" on a text key', async () => {
      const docs = [
        { ...contacts[3], _id: 'x1', data: { flag: true } },
        { ...contacts[3], _id: 'x2', data: { flag: 'true' } },
        { ...contacts[3], _id: 'x3', data: { flag: 'True' } },
      ];
      const condition = one({ field: 'data.flag', operator: 'equals', value: 'true' });
      const mixed = { types: { flag: 'string' as DataType } };
      expect(docs.filter((d) => matchesCondition(condition, d, { now, ...mixed })).map((d) => d._id)).toEqual(['x1', 'x2']);
    });
  });

  describe('a key no contact has yet: the value decides, nothing is refused', () => {
    it.each(
      cases([
        [{ field: 'data.nothing', operator: 'equals', value: 'x' }, []],
        [{ field: 'data.nothing', operator: 'notEquals', value: 'x' }, ALL],
        [{ field: 'data.nothing', operator: 'contains', value: 'x' }, []],
        [{ field: 'data.nothing', operator: 'notContains', value: 'x' }, ALL],
        [{ field: 'data.nothing', operator: 'greaterThan', value: 3 }, []],
        [{ field: 'data.nothing', operator: 'lessThan', value: '2030-01-01' }, []],
        [{ field: 'data.nothing', operator: 'within', value: 1, unit: 'days' }, []],
        [{ field: 'data.nothing', operator: 'olderThan', value: 1, unit: 'days' }, []],
        [{ field: 'data.nothing', operator: 'exists' }, []],
        [{ field: 'data.nothing', operator: 'notExists' }, ALL],
      ]),
    )('%s', async (_name, f, ids) => {
      expect(await members(one(f))).toEqual(ids);
    });

    it('compares by the value for a key without a recorded type', async () => {
      expect(await members(one({ field: 'data.age', operator: 'greaterThan', value: 18 }), { types: {} })).toEqual(['ann', 'cat']);
      expect(await members(one({ field: 'data.renews', operator: 'lessThan', value: '2025-06-10' }), { types: {} })).toEqual(['bob']);
    });
  });

  it.each(['triggered', 'triggeredWithin', 'triggeredOlderThan', 'notTriggered'])('refuses the event operator %s on a data key', (operator) => {
    expect(refusal(one({ field: 'data.plan', operator, value: 1, unit: 'days' }))[0]).toMatchObject({ field: FILTER, code: 'operator_not_applicable' });
  });

  it.each(['', 'a.b', '$where', '__proto__', 'x'.repeat(101)])('refuses the data key %j', (key) => {
    expect(refusal(one({ field: `data.${key}`, operator: 'exists' }))[0]).toMatchObject({ field: FILTER, code: 'unknown_field' });
  });

  it('refuses a comparison with a value that is neither number nor date', () => {
    expect(refusal(one({ field: 'data.nothing', operator: 'greaterThan', value: 'abc' }))[0]).toMatchObject({ field: FILTER, code: 'invalid_value' });
    expect(refusal(one({ field: 'data.nothing', operator: 'lessThan', value: true }))[0]).toMatchObject({ field: FILTER, code: 'invalid_value' });
  });
});

describe('event.<name> and email activity', () => {
  it.each(
    cases([
      [{ field: 'event.purchase', operator: 'triggered' }, ['ann', 'bob']],
      [{ field: 'event.purchase', operator: 'triggered', value: 'ignored' }, ['ann', 'bob']],
      [{ field: 'event.purchase', operator: 'notTriggered', value: false }, ['cat', 'dan']],
      [{ field: 'event.purchase', operator: 'exists' }, ['ann', 'bob']],
      [{ field: 'event.purchase', operator: 'notExists' }, ['cat', 'dan']],
      [{ field: 'event.purchase', operator: 'triggeredWithin', value: 3, unit: 'hours' }, ['ann']],
      [{ field: 'event.purchase', operator: 'triggeredWithin', value: 30, unit: 'days' }, ['ann', 'bob']],
      [{ field: 'event.purchase', operator: 'triggeredWithin', value: 120, unit: 'minutes' }, ['ann']], // boundary inside
      [{ field: 'event.purchase', operator: 'triggeredOlderThan', value: 1, unit: 'days' }, ['bob']],
      [{ field: 'event.purchase', operator: 'triggeredOlderThan', value: 1, unit: 'hours' }, ['ann', 'bob']],
      [{ field: 'event.purchase', operator: 'triggeredOlderThan', value: 120, unit: 'minutes' }, ['bob']], // ...and not older
      // Numeric operators compare how many times it was tracked; never is 0.
      [{ field: 'event.purchase', operator: 'greaterThan', value: 1 }, ['ann']],
      [{ field: 'event.purchase', operator: 'greaterThanOrEqual', value: 1 }, ['ann', 'bob']],
      [{ field: 'event.purchase', operator: 'greaterThanOrEqual', value: 0 }, ALL],
      [{ field: 'event.purchase', operator: 'lessThan', value: 2 }, ['bob', 'cat', 'dan']],
      [{ field: 'event.purchase', operator: 'lessThan', value: 0 }, []],
      [{ field: 'event.purchase', operator: 'lessThanOrEqual', value: 0 }, ['cat', 'dan']],
      [{ field: 'event.purchase', operator: 'lessThanOrEqual', value: '1' }, ['bob', 'cat', 'dan']],
      [{ field: 'event.signup.completed', operator: 'triggered' }, ['ann']],
      [{ field: 'event.never', operator: 'notTriggered' }, ALL],
      [{ field: 'event.email.open', operator: 'triggered' }, ['ann']],
      [{ field: 'email.opened', operator: 'triggered' }, ['ann']],
      [{ field: 'email.opened', operator: 'notTriggered' }, ['bob', 'cat', 'dan']],
      [{ field: 'email.opened', operator: 'triggeredOlderThan', value: 2, unit: 'days' }, ['ann']],
      [{ field: 'email.clicked', operator: 'triggeredWithin', value: 1, unit: 'hours' }, ['bob']],
      [{ field: 'email.clicked', operator: 'greaterThan', value: 2 }, ['bob']],
      [{ field: 'email.clicked', operator: 'exists' }, ['bob']],
      [{ field: 'email.bounced', operator: 'exists' }, ['bob']],
      [{ field: 'email.bounced', operator: 'notExists' }, ['ann', 'cat', 'dan']],
      [{ field: 'email.bounced', operator: 'triggeredWithin', value: 2, unit: 'days' }, ['bob']],
    ]),
  )('%s', async (_name, f, ids) => {
    expect(await members(one(f))).toEqual(ids);
  });

  it.each(['equals', 'notEquals', 'contains', 'notContains', 'within', 'olderThan'])('refuses %s on an event and on email activity', (operator) => {
    for (const field of ['event.purchase', 'email.opened', 'email.clicked', 'email.bounced']) {
      expect(refusal(one({ field, operator, value: 1, unit: 'days' }))[0]).toMatchObject({ field: FILTER, code: 'operator_not_applicable' });
    }
  });

  it.each([
    ['triggeredWithin without unit', { operator: 'triggeredWithin', value: 1 }],
    ['triggeredOlderThan without value', { operator: 'triggeredOlderThan', unit: 'days' }],
    ['triggeredWithin 0', { operator: 'triggeredWithin', value: 0, unit: 'days' }],
    ['a negative count', { operator: 'greaterThan', value: -1 }],
    ['a count that is no number', { operator: 'greaterThan', value: 'many' }],
    ['a unit on triggered', { operator: 'triggered', unit: 'days' }],
  ])('refuses %s', (_name, f) => {
    expect(refusal(one({ field: 'event.purchase', ...f }))[0].field).toBe(FILTER);
  });

  it('refuses an empty or too long event name and unknown email activity', () => {
    expect(refusal(one({ field: 'event.', operator: 'triggered' }))[0]).toMatchObject({ field: FILTER, code: 'unknown_field' });
    expect(refusal(one({ field: `event.${'e'.repeat(201)}`, operator: 'triggered' }))[0]).toMatchObject({ code: 'unknown_field' });
    expect(refusal(one({ field: 'email.sent', operator: 'triggered' }))[0]).toMatchObject({ field: FILTER, code: 'unknown_field' });
  });

  it('reads the summary under the escaped key, e.g. eventStats.signup%2Ecompleted.count', () => {
    expect(compileCondition(one({ field: 'event.signup.completed', operator: 'triggered' }), options())).toEqual({
      'eventStats.signup%2Ecompleted.count': { $gte: 1 },
    });
    expect(compileCondition(one({ field: 'email.clicked', operator: 'triggeredWithin', value: 1, unit: 'hours' }), options())).toEqual({
      'eventStats.email%2Eclick.last': { $gte: ago(HOUR) },
    });
  });
});

describe('logic and groups', () => {
  const pro = { field: 'data.plan', operator: 'contains', value: 'pro' };
  const adult = { field: 'data.age', operator: 'greaterThan', value: 18 };
  const unsubscribed = { field: 'subscribed', operator: 'equals', value: false };
  const vip = { field: 'data.vip', operator: 'equals', value: true };

  it('AND: every group must hold', async () => {
    expect(await members({ logic: 'AND', groups: [{ filters: [pro] }, { filters: [{ ...adult, value: 40 }] }] })).toEqual(['cat']);
  });

  it('OR: one group is enough', async () => {
    expect(await members({ logic: 'OR', groups: [{ filters: [{ ...pro, operator: 'equals' }] }, { filters: [unsubscribed] }] })).toEqual(['ann', 'bob']);
  });

  it('the filters inside one group are all required, under either logic', async () => {
    expect(await members({ logic: 'OR', groups: [{ filters: [pro, vip] }, { filters: [unsubscribed, adult] }] })).toEqual(['ann']);
    expect(await members({ logic: 'AND', groups: [{ filters: [pro, adult, { field: 'subscribed', operator: 'equals', value: true }] }] })).toEqual([
      'ann',
      'cat',
    ]);
  });

  it('folds filters known for every contact: email exists is true, email notExists is false', async () => {
    const always = { field: 'email', operator: 'exists' };
    const never = { field: 'email', operator: 'notExists' };
    expect(compileCondition({ logic: 'AND', groups: [{ filters: [always] }] }, options())).toEqual({});
    expect(compileCondition({ logic: 'AND', groups: [{ filters: [always, never] }] }, options())).toEqual({ _id: { $in: [] } });
    expect(compileCondition({ logic: 'OR', groups: [{ filters: [never] }, { filters: [always, pro] }] }, options())).toEqual({
      'data.plan': { $regex: 'pro', $options: 'i' },
    });
    expect(await members({ logic: 'OR', groups: [{ filters: [never] }, { filters: [always] }] })).toEqual(ALL);
    expect(await members({ logic: 'AND', groups: [{ filters: [always] }, { filters: [never] }] })).toEqual([]);
  });

  it('uses only operators MongoDB, FerretDB and the embedded store agree on', () => {
    const allowed = new Set(['$and', '$or', '$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$exists', '$regex', '$options', '$not']);
    const seen = new Set<string>();
    const walk = (v: unknown): void => {
      if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') for (const [k, inner] of Object.entries(v)) (k.startsWith('$') && seen.add(k), walk(inner));
    };
    const everything = {
      logic: 'OR',
      groups: [
        { filters: [{ field: 'email', operator: 'notContains', value: 'x' }, { field: 'email', operator: 'notEquals', value: 'x' }] },
        { filters: [{ field: 'data.code', operator: 'notEquals', value: 5 }, { field: 'data.plan', operator: 'notExists' }] },
        { filters: [{ field: 'data.renews', operator: 'within', value: 1, unit: 'days' }, { field: 'event.a', operator: 'lessThan', value: 3 }] },
        { filters: [{ field: 'event.a', operator: 'notTriggered' }, { field: 'createdAt', operator: 'olderThan', value: 1, unit: 'hours' }] },
        { filters: [{ field: 'data.code', operator: 'equals', value: 5 }, { field: 'data.age', operator: 'greaterThanOrEqual', value: 1 }] },
        { filters: [{ field: 'data.code', operator: 'contains', value: '1' }, { field: 'data.code', operator: 'notContains', value: 'e' }] },
      ],
    };
    walk(compileCondition(everything, options({ numbers: { code: [1, 2] } })));
    expect([...seen].filter((op) => !allowed.has(op))).toEqual([]);
    expect(seen.size).toBeGreaterThan(8);
  });

  it('keeps the condition as data: the compiled filter for notEquals on a mixed key lists each text form', () => {
    expect(compileCondition(one({ field: 'data.code', operator: 'notEquals', value: 5 }), options())).toEqual({
      $and: [{ 'data.code': { $ne: '5' } }, { 'data.code': { $ne: 5 } }],
    });
    expect(compileCondition(one({ field: 'email', operator: 'contains', value: 'a.b*' }), options())).toEqual({
      email: { $regex: 'a\\.b\\*', $options: 'i' },
    });
  });
});

describe('refused conditions name what is wrong', () => {
  it.each([
    ['not an object', 'vip', 'condition'],
    ['null', null, 'condition'],
    ['no logic', { groups: [{ filters: [{ field: 'email', operator: 'exists' }] }] }, 'condition.logic'],
    ['a lower-case logic', { logic: 'and', groups: [{ filters: [{ field: 'email', operator: 'exists' }] }] }, 'condition.logic'],
    ['no groups', { logic: 'AND' }, 'condition.groups'],
    ['empty groups', { logic: 'AND', groups: [] }, 'condition.groups'],
    ['51 groups', { logic: 'AND', groups: Array.from({ length: 51 }, () => ({ filters: [{ field: 'email', operator: 'exists' }] })) }, 'condition.groups'],
    ['an unknown key', { logic: 'AND', groups: [{ filters: [{ field: 'email', operator: 'exists' }] }], extra: 1 }, 'condition.extra'],
    ['a group that is no object', { logic: 'AND', groups: [[]] }, 'condition.groups.0'],
    ['a group without filters', { logic: 'AND', groups: [{}] }, 'condition.groups.0.filters'],
    ['a group with empty filters', { logic: 'AND', groups: [{ filters: [] }] }, 'condition.groups.0.filters'],
    ['a filter that is no object', { logic: 'AND', groups: [{ filters: ['email'] }] }, FILTER],
    ['a filter without field', one({ operator: 'exists' } as F), FILTER],
    ['an unknown field', one({ field: 'name', operator: 'equals', value: 'x' }), FILTER],
    ['an unknown operator', one({ field: 'email', operator: 'like', value: 'x' }), FILTER],
    ['a filter with an unknown key', one({ field: 'email', operator: 'equals', value: 'x', values: ['y'] } as F), FILTER],
    ['a missing value', one({ field: 'email', operator: 'equals' }), FILTER],
    ['a null value', one({ field: 'data.plan', operator: 'equals', value: null }), FILTER],
    ['an object value', one({ field: 'data.plan', operator: 'equals', value: { $gt: '' } }), FILTER],
    ['an array value', one({ field: 'data.plan', operator: 'equals', value: ['a'] }), FILTER],
  ])('%s', (_name, condition, field) => {
    expect(refusal(condition).map((e) => e.field)).toContain(field);
  });

  it('names every bad filter by its path, not only the first', () => {
    const errors = refusal({
      logic: 'OR',
      groups: [
        { filters: [{ field: 'email', operator: 'exists' }, { field: 'email', operator: 'greaterThan', value: 1 }] },
        { filters: [{ field: 'subscribed', operator: 'like', value: true }] },
      ],
    });
    expect(errors.map((e) => e.field)).toEqual(['condition.groups.0.filters.1', 'condition.groups.1.filters.0']);
    expect(errors[1].message).toMatch(/Unknown operator "like"/);
  });

  it('takes another path prefix for conditions elsewhere (a campaign audience)', () => {
    const errors = refusal(one({ field: 'email', operator: 'within', value: 1, unit: 'days' }), { path: 'audienceCondition' });
    expect(errors[0].field).toBe('audienceCondition.groups.0.filters.0');
  });

  it('is a VALIDATION_ERROR whose message names the first problem', () => {
    expect(() => compileCondition(one({ field: 'email', operator: 'like' }), options())).toThrow(/condition\.groups\.0\.filters\.0: Unknown operator/);
  });
});

describe('matchesCondition', () => {
  it('decides one document as the query does, including time-based filters', () => {
    const recent = one({ field: 'createdAt', operator: 'within', value: 1, unit: 'hours' });
    expect(matchesCondition(recent, contacts[0], { now, types })).toBe(true);
    expect(matchesCondition(recent, contacts[1], { now, types })).toBe(false);
    // The same document later: now it is older than an hour.
    expect(matchesCondition(recent, contacts[0], { now: new Date(now.getTime() + HOUR), types })).toBe(false);
  });

  it('never throws for a key whose type changed since the segment was saved', () => {
    const condition = one({ field: 'data.plan', operator: 'greaterThan', value: 5 });
    expect(matchesCondition(condition, contacts[0], { now, types })).toBe(false);
    expect(matchesCondition(condition, { ...contacts[0], data: { plan: 7 } }, { now, types: { plan: 'number' } })).toBe(true);
  });

  it('compiles once for many documents with conditionMatcher', () => {
    const test = conditionMatcher(one({ field: 'event.purchase', operator: 'triggered' }), { now, types });
    expect(contacts.filter(test).map((d) => d._id)).toEqual(['ann', 'bob']);
  });

  it('still refuses a condition that is wrong in itself', () => {
    expect(() => matchesCondition(one({ field: 'email', operator: 'like' }), contacts[0], { now, types })).toThrow(AppError);
  });
});
