/**
 * Benchmark: a segment's member count and its first page over many contacts, on the embedded
 * store and on a MongoDB-wire server (FerretDB here, started by the benchmark; or MONGODB_URL /
 * --mongodb-url for a real MongoDB).
 *
 *   node --max-old-space-size=8192 --import tsx bench/segments.ts [--contacts 1000000]
 *        [--stores embedded,mongo] [--runs 5] [--mongodb-url mongodb://…/db] [--compare-ref <git ref>]
 *        [--note "machine busy with ..."] [--no-record]
 *   npm run bench:segments -- [same options]
 *
 * Data: `--contacts` contacts of one project, generated from a seeded PRNG in the contact
 * projection's shape (`domain/contacts/collection.ts`: projectId, email, subscribed, data,
 * createdAt, updatedAt, eventStats with count/first/last per event), UUIDv7 ids in creation
 * order, plus the project's `data_fields` types, bulk-inserted straight into the store (10,000
 * per insertMany) with the platform's own indexes (`ensureContactIndexes`). No HTTP, no actors.
 *
 * Measured, per segment, after one untimed warm-up run, `--runs` times each: the member count as
 * `GET /segments/:id` computes it (`getSegment`: the segment, the project's data types, the
 * compiled filter, one countDocuments) and the first page as `GET /segments/:id/contacts`
 * computes it (`listSegmentContacts`: the 20 newest members and the total, in parallel). The
 * median is reported with min and max. One contact is written (untimed) before each timed run,
 * as in a live project, so no answer remembered from the previous run can serve it. The
 * reference row counts `{projectId}` (the whole project): the floor of any count in that store.
 *
 * `--compare-ref <ref>` (e.g. 6055d3e, the last commit with the journal store) checks that commit
 * out in a temporary git worktree and measures its embedded store too, right after this tree's,
 * in this process: the same data and the same domain functions (this tree's), only the store's
 * code is the ref's. Targets: the embedded store's count and first page under 1 s each.
 *
 * Results are printed and appended to bench/results/segments.md (unless --no-record).
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { v7 } from 'uuid';
import { MongoStore } from '../adapters/mongo/store.ts';
import { contacts, ensureContactIndexes, eventKey, type ContactDoc } from '../domain/contacts/collection.ts';
import type { DocumentStore } from '../ports/store.ts';
import type { Platform } from '../runtime/platform.ts';
import { ensureSegmentIndexes } from '../domain/segments/collection.ts';
import type { FilterCondition } from '../domain/segments/filter.ts';
import { createSegment, getSegment, listSegmentContacts } from '../domain/segments/service.ts';
import { mulberry32 } from '../test/harness/prng.ts';
import { startMongoServer, type MongoServer } from './mongo-server.ts';
import { appendResults, currentTree, openTreeStore, treeLabel, worktreeOf, type Tree, wholeOption, cleanup, loadAverage, machineBusySeconds, machineFacts, processCpuSeconds, printUsage, runMain, tempDir } from './common.ts';

const PROJECT = 'bench-project';
const SEED = 0x5e6d; // every run generates the same contacts
const NOW = Date.parse('2026-11-21T12:00:00Z');
const DAY = 86_400_000;
const TARGET_MS = { embedded: 1_000, mongo: 250 } as const;

const { values: args } = parseArgs({
  options: {
    contacts: { type: 'string', default: '1000000' },
    stores: { type: 'string', default: 'embedded,mongo' },
    runs: { type: 'string', default: '5' },
    'mongodb-url': { type: 'string' },
    'compare-ref': { type: 'string' },
    note: { type: 'string' },
    'no-record': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) printUsage(import.meta.url);
const count = wholeOption('contacts', args.contacts, 1);
const runs = wholeOption('runs', args.runs, 1);
if (!Number.isInteger(count) || count < 1000) throw new Error('--contacts must be a whole number of at least 1000');
if (!Number.isInteger(runs) || runs < 1) throw new Error('--runs must be a positive whole number');
const stores = args.stores.split(',').map((s) => s.trim()) as ('embedded' | 'mongo')[];
if (!stores.every((s) => s === 'embedded' || s === 'mongo')) throw new Error('--stores is a list of embedded, mongo');
const mongoUrl = args['mongodb-url'] ?? process.env.MONGODB_URL;

// ---- the data ---------------------------------------------------------------------------------

const PLANS = ['free', 'free', 'free', 'starter', 'pro', 'pro', 'team', 'enterprise'];
const COUNTRIES = ['US', 'US', 'US', 'DE', 'DE', 'FR', 'GB', 'GB', 'NL', 'ES', 'IT', 'BR', 'IN', 'JP', 'CA', 'AU', 'NZ', 'SE', 'PL', 'MX'];
const MAIL_HOSTS = ['gmail.com', 'outlook.com', 'yahoo.com', 'proton.me', 'company.example', 'shop.example'];

/** The n-th contact of the project: created over the last two years, oldest first. */
function* generate(total: number): Generator<ContactDoc> {
  const rnd = mulberry32(SEED);
  const span = 730 * DAY;
  for (let i = 0; i < total; i++) {
    const created = NOW - span + Math.floor((span * i) / total);
    const iso = (t: number) => new Date(Math.min(t, NOW)).toISOString();
    const stat = (share: number, maxCount: number) => {
      if (rnd() >= share) return undefined;
      const first = created + Math.floor(rnd() * (NOW - created));
      const last = first + Math.floor(rnd() * (NOW - first));
      return { count: 1 + Math.floor(rnd() * maxCount), first: iso(first), last: iso(last) };
    };
    const eventStats: Record<string, { count: number; first: string; last: string }> = {
      [eventKey('signed-up')]: { count: 1, first: iso(created), last: iso(created) },
    };
    const add = (name: string, s: ReturnType<typeof stat>) => {
      if (s) eventStats[eventKey(name)] = s;
    };
    add('purchase', stat(0.35, 12));
    add('page_view', stat(0.8, 200));
    add('email.open', stat(0.5, 30));
    add('email.click', stat(0.15, 8));
    add('email.bounce', stat(0.01, 1));
    const data: ContactDoc['data'] = {
      plan: PLANS[Math.floor(rnd() * PLANS.length)],
      country: COUNTRIES[Math.floor(rnd() * COUNTRIES.length)],
      spent: Math.round(rnd() * rnd() * 200_000) / 100,
      seats: 1 + Math.floor(rnd() * rnd() * 50),
      signupDate: iso(created),
    };
    if (rnd() < 0.3) data.beta = rnd() < 0.5;
    yield {
      _id: v7({ msecs: created, seq: i & 0xffff }),
      projectId: PROJECT,
      email: `user${i}@${MAIL_HOSTS[i % MAIL_HOSTS.length]}`,
      subscribed: rnd() < 0.92,
      data,
      createdAt: iso(created),
      updatedAt: iso(created + Math.floor(rnd() * (NOW - created))),
      eventStats,
    };
  }
}

/** The project's data key types, as `recordDataTypes` would have left them. */
const DATA_FIELDS = [
  ['plan', 'string'],
  ['country', 'string'],
  ['spent', 'number'],
  ['seats', 'number'],
  ['signupDate', 'date'],
  ['beta', 'boolean'],
].map(([key, type]) => ({ _id: `${PROJECT}/${key}`, projectId: PROJECT, key, types: [type] }));

async function load(store: DocumentStore, total: number): Promise<number> {
  const started = performance.now();
  await ensureContactIndexes(store);
  await ensureSegmentIndexes(store);
  await store.collection('data_fields').insertMany(DATA_FIELDS);
  const collection = contacts(store);
  let batch: ContactDoc[] = [];
  let done = 0;
  for (const doc of generate(total)) {
    batch.push(doc);
    if (batch.length === 10_000) {
      await collection.insertMany(batch);
      done += batch.length;
      batch = [];
      if (done % 100_000 === 0) process.stderr.write(`  ${done} contacts inserted (${((performance.now() - started) / 1000).toFixed(0)} s)\n`);
    }
  }
  if (batch.length) await collection.insertMany(batch);
  return (performance.now() - started) / 1000;
}

// ---- the segments -----------------------------------------------------------------------------

const one = (field: string, operator: string, value?: string | number | boolean, unit?: string) => ({
  field,
  operator,
  ...(value !== undefined ? { value } : {}),
  ...(unit ? { unit } : {}),
});
const all = (...filters: ReturnType<typeof one>[]): FilterCondition => ({ logic: 'AND', groups: [{ filters }] as FilterCondition['groups'] });

/** Realistic segments: data comparisons, subscription, event summaries, mixed logic. */
const SEGMENTS: { name: string; what: string; condition: FilterCondition }[] = [
  { name: 'Pro plan', what: 'data.plan equals "pro"', condition: all(one('data.plan', 'equals', 'pro')) },
  {
    name: 'Subscribed big spenders',
    what: 'subscribed = true AND data.spent > 500',
    condition: all(one('subscribed', 'equals', true), one('data.spent', 'greaterThan', 500)),
  },
  {
    name: 'Recent buyers',
    what: 'event.purchase triggeredWithin 30 days',
    condition: all(one('event.purchase', 'triggeredWithin', 30, 'days')),
  },
  {
    name: 'Engaged Germans or recent openers',
    what: '(data.country = "DE" AND event.purchase count ≥ 3) OR email.opened triggeredWithin 7 days',
    condition: {
      logic: 'OR',
      groups: [
        { filters: [one('data.country', 'equals', 'DE'), one('event.purchase', 'greaterThanOrEqual', 3)] },
        { filters: [one('email.opened', 'triggeredWithin', 7, 'days')] },
      ],
    } as FilterCondition,
  },
  {
    name: 'Dormant never-buyers',
    what: 'event.purchase notTriggered AND data.signupDate olderThan 180 days AND subscribed = true',
    condition: all(one('event.purchase', 'notTriggered'), one('data.signupDate', 'olderThan', 180, 'days'), one('subscribed', 'equals', true)),
  },
  {
    name: 'Enterprise in NZ',
    what: 'data.plan = "enterprise" AND data.country = "NZ" AND data.seats ≥ 10 (few members)',
    condition: all(one('data.plan', 'equals', 'enterprise'), one('data.country', 'equals', 'NZ'), one('data.seats', 'greaterThanOrEqual', 10)),
  },
  {
    name: 'Gmail users',
    what: 'email contains "gmail" (a case-insensitive substring: no index can help)',
    condition: all(one('email', 'contains', 'gmail')),
  },
];

// ---- timing -----------------------------------------------------------------------------------

interface Timing {
  median: number;
  min: number;
  max: number;
}

/**
 * One warm-up, then `runs` timed runs of `work`. Before each, `touch` writes one contact (untimed),
 * as a live project does between two requests: nothing a store remembers about the unchanged
 * collection (the embedded store's last count) answers the timed run.
 */
async function time(work: () => Promise<unknown>, touch: () => Promise<unknown>): Promise<Timing> {
  await work(); // warm-up: JIT, caches, the server's first plan
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    await touch();
    const t = performance.now();
    await work();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)], min: ms[0], max: ms[ms.length - 1] };
}

interface Row {
  name: string;
  what: string;
  members: number;
  count: Timing;
  page: Timing;
}

interface StoreRun {
  store: 'embedded' | 'mongo';
  label: string;
  loadSeconds: number;
  reference: Timing;
  rows: Row[];
  cpuOthers: number;
  wall: number;
  loadBefore: string;
}

async function measure(kind: 'embedded' | 'mongo', label: string, store: DocumentStore): Promise<StoreRun> {
  const loadBefore = loadAverage();
  console.error(`[${label}] generating and inserting ${count} contacts (load average ${loadBefore})`);
  const loadSeconds = await load(store, count);
  console.error(`[${label}] inserted in ${loadSeconds.toFixed(0)} s; timing ${SEGMENTS.length} segments, ${runs} runs each`);
  const p = { store, log: { warn() {}, info() {}, debug() {} } } as unknown as Platform;
  const busy0 = machineBusySeconds();
  const self0 = processCpuSeconds('self');
  const server0 = kind === 'mongo' ? serverCpu() : 0;
  const t0 = performance.now();
  const someone = (await contacts(store).findOne({ projectId: PROJECT }, { projection: { _id: 1 } }))!._id;
  let touches = 0;
  const touch = () => contacts(store).updateOne({ _id: someone }, { $set: { updatedAt: new Date(NOW + ++touches).toISOString() } });
  const reference = await time(() => contacts(store).countDocuments({ projectId: PROJECT }), touch);
  const rows: Row[] = [];
  for (const segment of SEGMENTS) {
    const created = await createSegment(p, PROJECT, { name: segment.name, type: 'DYNAMIC', condition: segment.condition, trackMembership: false } as never);
    const countTiming = await time(() => getSegment(p, PROJECT, created.id), touch);
    const page = await time(() => listSegmentContacts(p, PROJECT, created.id, { page: 1, pageSize: 20 } as never), touch);
    const members = (await getSegment(p, PROJECT, created.id)).memberCount;
    rows.push({ name: segment.name, what: segment.what, members, count: countTiming, page });
    console.error(`[${label}] ${segment.name}: ${members} members, count ${countTiming.median.toFixed(0)} ms, first page ${page.median.toFixed(0)} ms`);
  }
  const wall = (performance.now() - t0) / 1000;
  const server = kind === 'mongo' ? serverCpu() - server0 : 0;
  const cpuOthers = Math.max(0, machineBusySeconds() - busy0 - (processCpuSeconds('self') - self0) - server) / wall;
  return { store: kind, label, loadSeconds, reference, rows, cpuOthers, wall, loadBefore };
}

// ---- FerretDB -----------------------------------------------------------------------------------

let mongoServer: MongoServer | undefined;

/** CPU seconds of the MongoDB-wire server (bench/mongo-server.ts): FerretDB and PostgreSQL. */
const serverCpu = () => mongoServer?.cpuSeconds() ?? 0;

// ---- report -------------------------------------------------------------------------------------

const ms = (t: Timing) => `${t.median.toFixed(0)} (${t.min.toFixed(0)}–${t.max.toFixed(0)})`;

function table(run: StoreRun): string {
  const target = TARGET_MS[run.store];
  const lines = [
    `| segment (${run.label}) | members | count, ms: median (min–max) | vs target ${target} ms | first page + total, ms | vs target ${target} ms |`,
    '| --- | ---: | ---: | :---: | ---: | :---: |',
    `| reference: count {projectId} (all ${count} contacts) | ${count} | ${ms(run.reference)} | | | |`,
  ];
  for (const r of run.rows) {
    lines.push(
      `| ${r.name}: ${r.what} | ${r.members} | ${ms(r.count)} | ${r.count.median < target ? 'met' : '**missed**'} | ${ms(r.page)} | ${r.page.median < target ? 'met' : '**missed**'} |`,
    );
  }
  return lines.join('\n');
}

async function main(): Promise<number> {
  const facts = machineFacts();
  const startedAt = new Date();
  const results: StoreRun[] = [];
  let compared: Tree | undefined;
  try {
    for (const kind of stores) {
      if (kind === 'embedded') {
        // This tree's store, then (--compare-ref) the ref's, one after the other, each closed before the next.
        if (args['compare-ref']) compared = await worktreeOf(args['compare-ref']);
        const trees = [currentTree(), ...(compared ? [compared] : [])];
        for (const tree of trees) {
          // The journal store never compacts here: the bulk insert would otherwise rewrite its journal.
          const store = await openTreeStore(tree, await tempDir('mailroom-bench-segments-'), { compactAfter: Number.MAX_SAFE_INTEGER });
          results.push(await measure('embedded', `embedded store: ${treeLabel(tree)}`, store));
          await store.close();
        }
      } else {
        mongoServer = mongoUrl ? undefined : await startMongoServer('segbench');
        const url = mongoUrl ?? mongoServer!.url;
        const store = await MongoStore.connect(url);
        const label = mongoUrl ? 'MongoDB at MONGODB_URL' : 'FerretDB 1.24 on PostgreSQL, MongoDB wire protocol';
        try {
          results.push(await measure('mongo', label, store));
        } finally {
          await store.close();
          await mongoServer?.stop();
        }
      }
    }
  } finally {
    await cleanup();
  }
  const context = results.map((r) => `${r.label}: load average ${r.loadBefore} before loading; bulk insert ${r.loadSeconds.toFixed(0)} s; other processes used ${r.cpuOthers.toFixed(2)} cores while timing`);
  const body = results.flatMap((r) => [table(r), '']);
  console.log([...context.map((line) => `- ${line}`), '', ...body].join('\n'));
  if (!args['no-record']) {
    appendResults('segments', 'Segment benchmark results', {
      startedAt,
      facts,
      config: [
        `data: ${count} contacts in one project (seeded), 6 data keys, 6 event summaries; ${runs} timed runs per number after one warm-up`,
        ...(compared ? [`compared with: \`--compare-ref ${compared.ref}\` = ${compared.commit} (${treeLabel(compared)}), its store loaded from a git worktree of that commit, measured after this tree's`] : []),
      ],
      context,
      note: args.note,
      body,
    });
  }
  return 0;
}

await runMain(main);
