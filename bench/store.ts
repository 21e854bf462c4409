/**
 * Benchmark: the embedded platform's start-up time and memory over a large project, on its SQLite
 * store and on the journal store it replaced (every document on the V8 heap, replayed from
 * DATA_DIR/store/store.journal at start; last in commit 6055d3e).
 *
 *   node --import tsx bench/store.ts [--contacts 1000000] [--events 10000000]
 *        [--journal-events 0,1000000] [--stores journal,sqlite] [--starts 3] [--track 1000]
 *        [--journal-heap 16384] [--note "machine busy with ..."] [--no-record]
 *   npm run bench:store -- [same options]
 *
 * One case = one store at one scale, run as `npm start` runs the platform (a child process on a
 * fresh temporary DATA_DIR, LOG_LEVEL=warn, no rate limit, no SMTP_URL):
 * 1. The platform starts on the empty DATA_DIR; a user signs up and creates a project over HTTP
 *    (its secret key is used below); the platform is stopped.
 * 2. A loader child (bench/store-load.ts) writes one project's `--contacts` contacts (with their
 *    data types, and for the journal store their actor states) and N events (bench/store-data.ts:
 *    seeded, in the shapes the product writes) straight into that DATA_DIR's store files.
 * 3. The platform is started `--starts` times on that DATA_DIR: each time, from spawn to the first
 *    200 of GET /health, and its RSS (VmRSS) at that moment.
 * 4. After the last start, a short load over the HTTP API with the project's secret key:
 *    `--track` POST /v1/track (8 at a time; 80 % known contacts, 20 % new ones), then one each of
 *    the reads a dashboard makes (contacts first page with its total, the next page, recent
 *    events, recent events by name, one contact's events, a new segment's count and first page).
 *    Then RSS, peak RSS (VmHWM) over the process's life and the JS heap (from GET /metrics).
 *
 * Cases: the journal store at each of `--journal-events` (with `--contacts`); SQLite at the
 * largest of those (the same data as the journal store's biggest case) and at `--events`. Two or
 * more journal cases give a per-event slope, from which the journal store at `--events` is
 * extrapolated (marked as such: it does not fit in this machine's memory at 10M events).
 * The journal store's platform and loader run with --max-old-space-size=`--journal-heap`.
 *
 * Results are printed and appended to bench/results/store.md (unless --no-record).
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { ApiClient } from '../test/harness/client.ts';
import { mulberry32 } from '../test/harness/prng.ts';
import {
  ROOT,
  appendResults,
  freePort,
  loadAverage,
  machineFacts,
  memoryOf,
  percentile,
  printUsage,
  runMain,
  sleep,
  startChild,
  stopChild,
  tempDir,
  wholeOption,
  type Child,
} from './common.ts';
import { contactEmail, contactId } from './store-data.ts';
import type { LoadSettings } from './store-load.ts';

/** The last commit with the journal store (adapters/embedded/store.ts); its own platform serves it. */
const JOURNAL_COMMIT = '6055d3e';
const TARGET = { rssMiB: 400, startSeconds: 3 };
const SEED = 0x7a11;

const { values: args } = parseArgs({
  options: {
    contacts: { type: 'string', default: '1000000' },
    events: { type: 'string', default: '10000000' },
    'journal-events': { type: 'string' },
    stores: { type: 'string', default: 'journal,sqlite' },
    starts: { type: 'string', default: '3' },
    track: { type: 'string', default: '1000' },
    'journal-heap': { type: 'string', default: '16384' },
    note: { type: 'string' },
    'no-record': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) printUsage(import.meta.url);
const stores = args.stores.split(',').map((s) => s.trim());
if (!stores.every((s) => s === 'journal' || s === 'sqlite') || stores.length === 0) throw new Error('--stores is a list of journal, sqlite');
const options = {
  contacts: wholeOption('contacts', args.contacts, 1000),
  events: wholeOption('events', args.events, 0),
  starts: wholeOption('starts', args.starts, 1),
  track: wholeOption('track', args.track, 1),
  journalHeap: wholeOption('journal-heap', args['journal-heap'], 256),
  journal: stores.includes('journal'),
  sqlite: stores.includes('sqlite'),
  record: !args['no-record'],
};
/** The journal store's scales (events, with --contacts); by default none and a tenth of --events. */
const journalEvents = (args['journal-events'] ?? `0,${Math.floor(options.events / 10)}`)
  .split(',')
  .map((raw) => wholeOption('journal-events', raw, 0))
  .sort((a, b) => a - b);
/** The scale both stores run at: the journal store's largest. */
const sharedEvents = journalEvents[journalEvents.length - 1];

const fmt = (n: number, decimals = 0) => (Number.isFinite(n) ? n.toFixed(decimals) : 'n/a');
const count = (n: number) => (n >= 1e6 && n % 1e5 === 0 ? `${n / 1e6}M` : n >= 1e3 && n % 100 === 0 ? `${n / 1e3}k` : String(n));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];

// ---- the platform ---------------------------------------------------------------------------------

type Store = 'sqlite' | 'journal';

interface Platform {
  proc: Child;
  api: ApiClient;
  /** Spawn → first 200 of GET /health. */
  startSeconds: number;
  rssAtHealthyMiB: number;
}

/** `node <tree>/apps/api/main.ts` (startChild) on `dataDir`, waited for until GET /health is 200. */
async function startPlatform(store: Store, tree: string, dataDir: string): Promise<Platform> {
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: String(port), DATA_DIR: dataDir, API_RATE_PER_MINUTE: '0', LOG_LEVEL: 'warn' };
  // Embedded mode with the dev outbox and an open /metrics, whatever the calling shell has set.
  for (const key of ['SMTP_URL', 'MAILROOM_MODE', 'REDIS_URL', 'MONGODB_URL', 'METRICS_TOKEN', 'NODE_OPTIONS']) delete env[key];
  if (store === 'journal') env.NODE_OPTIONS = `--max-old-space-size=${options.journalHeap}`;
  const url = `http://127.0.0.1:${port}`;
  const spawnedAt = performance.now();
  const proc = startChild(`platform (${store})`, join(tree, 'apps/api/main.ts'), env, undefined, { ipc: false });
  for (;;) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`the platform (${store}) exited (${proc.child.exitCode ?? proc.child.signalCode}) before answering /health:\n${proc.logTail()}`);
    }
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    if (performance.now() - spawnedAt > 30 * 60_000) throw new Error(`the platform (${store}) did not answer /health within 30 minutes:\n${proc.logTail()}`);
    await sleep(20);
  }
  const startSeconds = (performance.now() - spawnedAt) / 1000;
  return { proc, api: new ApiClient(url), startSeconds, rssAtHealthyMiB: memoryOf(proc.pid).rssMiB };
}

/** A user and a project over the public API (signup answers with a session at once). */
async function createProject(api: ApiClient): Promise<{ secretKey: string; projectId: string }> {
  const signup = await api.post('/auth/signup', { email: 'bench-owner@example.com', password: 'bench password 1234' });
  if (signup.status !== 201) throw new Error(`signup failed (${signup.status}): ${JSON.stringify(signup.body)}`);
  const project = await api.post('/projects', { name: 'Store benchmark' }, { auth: signup.body.data.token });
  if (project.status !== 201) throw new Error(`project creation failed (${project.status}): ${JSON.stringify(project.body)}`);
  return { secretKey: project.body.data.secretKey, projectId: project.body.data.id };
}

/** Runs the loader child and waits for it; its progress lines are passed through. */
async function load(settings: LoadSettings): Promise<number> {
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_STORE_LOAD: JSON.stringify(settings), DATA_DIR: settings.dataDir };
  delete env.NODE_OPTIONS;
  if (settings.store === 'journal') env.NODE_OPTIONS = `--max-old-space-size=${options.journalHeap}`;
  const started = performance.now();
  const loader = startChild(`loader (${settings.store})`, 'bench/store-load.ts', env, undefined, { ipc: false });
  loader.child.stderr!.on('data', (chunk: Buffer) => process.stderr.write(chunk));
  const code = await new Promise<number | null>((resolve) => loader.child.once('exit', (c) => resolve(c)));
  await stopChild(loader.child);
  if (code !== 0) throw new Error(`the loader (${settings.store}) failed (${code}):\n${loader.logTail()}`);
  return (performance.now() - started) / 1000;
}

/** Bytes under a directory. */
function diskBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    total += entry.isDirectory() ? diskBytes(path) : statSync(path).size;
  }
  return total;
}

/** The source tree of JOURNAL_COMMIT (git archive, no worktree to prune), with this repo's node_modules. */
async function journalTree(): Promise<string> {
  const dir = await tempDir('mailroom-bench-journal-tree-');
  const out = spawnSync('sh', ['-c', `git archive ${JOURNAL_COMMIT} | tar -x -C "${dir}"`], { cwd: ROOT, encoding: 'utf8' });
  if (out.status !== 0) throw new Error(`git archive ${JOURNAL_COMMIT} failed: ${out.stderr}`);
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  return dir;
}

// ---- the load -------------------------------------------------------------------------------------

interface Reading {
  what: string;
  ms: number;
  status: number;
}

interface LoadOutcome {
  track: { requests: number; seconds: number; p50: number; p99: number; failures: number; firstFailure?: string };
  reads: Reading[];
}

/** `--track` POST /v1/track, 8 at a time, then the reads of a dashboard, each timed. */
async function drive(api: ApiClient, secretKey: string, contacts: number): Promise<LoadOutcome> {
  const as = { auth: secretKey };
  const rnd = mulberry32(SEED);
  const names = ['page_view', 'page_view', 'feature_used', 'login', 'purchase'];
  let next = 0;
  let fresh = 0;
  const latencies = new Float64Array(options.track);
  let failures = 0;
  let firstFailure: string | undefined;
  const startedAt = performance.now();
  const worker = async () => {
    for (let n = next++; n < options.track; n = next++) {
      const email = rnd() < 0.8 ? contactEmail(Math.floor(rnd() * contacts)) : `bench-new-${fresh++}@example.com`;
      const event = names[Math.floor(rnd() * names.length)];
      const data = event === 'purchase' ? { amount: Math.round(rnd() * 50_000) / 100, currency: 'EUR' } : { path: '/pricing' };
      const t0 = performance.now();
      const res = await api.post('/v1/track', { email, event, data }, as);
      latencies[n] = performance.now() - t0;
      if (res.status !== 200) {
        failures++;
        firstFailure ??= `${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  const seconds = (performance.now() - startedAt) / 1000;
  latencies.sort();

  const reads: Reading[] = [];
  const timed = async (what: string, call: () => Promise<{ status: number; body: any }>) => {
    const t0 = performance.now();
    const res = await call();
    reads.push({ what, ms: performance.now() - t0, status: res.status });
    return res;
  };
  const page = await timed('GET /contacts?limit=20 (newest first, with the total)', () => api.get('/contacts?limit=20', as));
  await timed('GET /contacts?limit=20&cursor=… (the next page)', () => api.get(`/contacts?limit=20&cursor=${page.body?.data?.cursor}`, as));
  await timed('GET /events?limit=50', () => api.get('/events?limit=50', as));
  await timed('GET /events?name=purchase&limit=50', () => api.get('/events?name=purchase&limit=50', as));
  await timed('GET /events/contact/:id?limit=50 (the oldest contact, the most events)', () => api.get(`/events/contact/${contactId(0, contacts)}?limit=50`, as));
  const condition = {
    logic: 'AND',
    groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value: 'pro' }, { field: 'event.purchase', operator: 'greaterThanOrEqual', value: 3 }] }],
  };
  const segment = await timed('POST /segments (plan = pro AND purchase count ≥ 3)', () => api.post('/segments', { name: 'Pro buyers', condition }, as));
  const id = segment.body?.data?.id;
  await timed('GET /segments/:id (its count)', () => api.get(`/segments/${id}`, as));
  await timed('GET /segments/:id/contacts (first page and total)', () => api.get(`/segments/${id}/contacts`, as));
  return {
    track: { requests: options.track, seconds, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), failures, firstFailure },
    reads,
  };
}

/** The JS heap the platform reports on GET /metrics (prom-client's default metrics), MiB. */
async function heapMiB(api: ApiClient): Promise<number> {
  const res = await api.get('/metrics');
  const bytes = /^nodejs_heap_size_used_bytes (\d+(?:\.\d+)?)/m.exec(String(res.body))?.[1];
  return bytes ? Number(bytes) / 1024 ** 2 : NaN;
}

// ---- one case -------------------------------------------------------------------------------------

interface CaseOutcome {
  store: Store;
  contacts: number;
  events: number;
  loadSeconds: number;
  diskMiB: number;
  startSeconds: number[];
  rssAtHealthyMiB: number[];
  rssAfterMiB: number;
  peakMiB: number;
  heapAfterMiB: number;
  load: LoadOutcome;
  loadBefore: string;
  logLines: number;
  logTail: string;
}

async function runCase(store: Store, tree: string, events: number): Promise<CaseOutcome> {
  const { contacts } = options;
  const label = `${store} ${count(contacts)} contacts + ${count(events)} events`;
  const dataDir = await tempDir('mailroom-bench-store-');
  console.error(`[${label}] setting up a project over HTTP`);
  const first = await startPlatform(store, tree, dataDir);
  const { secretKey, projectId } = await createProject(first.api);
  await stopChild(first.proc.child);

  console.error(`[${label}] writing the data into ${dataDir}`);
  const loadSeconds = await load({ store, dataDir, projectId, contacts, events, tree });
  const diskMiB = diskBytes(dataDir) / 1024 ** 2;

  const loadBefore = loadAverage();
  const startSeconds: number[] = [];
  const rssAtHealthyMiB: number[] = [];
  let platform: Platform | undefined;
  try {
    for (let s = 0; s < options.starts; s++) {
      if (platform) await stopChild(platform.proc.child);
      platform = await startPlatform(store, tree, dataDir);
      startSeconds.push(platform.startSeconds);
      rssAtHealthyMiB.push(platform.rssAtHealthyMiB);
      console.error(`[${label}] start ${s + 1}: healthy after ${fmt(platform.startSeconds, 2)} s, RSS ${fmt(platform.rssAtHealthyMiB)} MiB`);
    }
    const loadOutcome = await drive(platform!.api, secretKey, contacts);
    const { rssMiB, peakMiB } = memoryOf(platform!.proc.pid);
    const heapAfterMiB = await heapMiB(platform!.api);
    console.error(`[${label}] after the load: RSS ${fmt(rssMiB)} MiB, peak ${fmt(peakMiB)} MiB, heap ${fmt(heapAfterMiB)} MiB`);
    return {
      store,
      contacts,
      events,
      loadSeconds,
      diskMiB,
      startSeconds,
      rssAtHealthyMiB,
      rssAfterMiB: rssMiB,
      peakMiB,
      heapAfterMiB,
      load: loadOutcome,
      loadBefore,
      logLines: platform!.proc.logLines(),
      logTail: platform!.proc.logTail(),
    };
  } catch (err) {
    if (platform) console.error(`[${label}] failed; last output:\n${platform.proc.logTail()}`);
    throw err;
  } finally {
    if (platform) await stopChild(platform.proc.child);
    spawnSync('rm', ['-rf', dataDir]); // gigabytes: gone before the next case writes its own
  }
}

// ---- report ---------------------------------------------------------------------------------------

/**
 * The journal store at `--events`, extrapolated along the events from its two largest cases (same
 * contacts): start time and RSS each along its own straight line. RSS, not the heap: the heap
 * reading on /metrics is taken without a GC, so it swings by tens of MiB at small scales.
 */
interface Extrapolation {
  events: number;
  startSeconds: number;
  rssAtHealthyMiB: number;
  rssAfterMiB: number;
  /** The slope of RSS when healthy, per million events. */
  mibPerMillionEvents: number;
}

function extrapolate(journal: CaseOutcome[]): Extrapolation | undefined {
  if (journal.length < 2) return undefined;
  const [a, b] = journal.slice(-2);
  if (b.events === a.events || b.events >= options.events) return undefined;
  const slope = (pick: (c: CaseOutcome) => number) => (pick(b) - pick(a)) / (b.events - a.events);
  const at = (pick: (c: CaseOutcome) => number) => pick(b) + slope(pick) * (options.events - b.events);
  return {
    events: options.events,
    startSeconds: at((c) => median(c.startSeconds)),
    rssAtHealthyMiB: at((c) => median(c.rssAtHealthyMiB)),
    rssAfterMiB: at((c) => c.rssAfterMiB),
    mibPerMillionEvents: slope((c) => median(c.rssAtHealthyMiB)) * 1e6,
  };
}

function table(cases: CaseOutcome[], extra: Extrapolation | undefined): string {
  const head = cases.map((c) => `${c.store === 'sqlite' ? '**SQLite**' : 'journal'}, ${count(c.contacts)} contacts + ${count(c.events)} events`);
  const row = (name: string, cells: string[], target = '') => `| ${name} | ${cells.join(' | ')} | ${extra ? `${extraCell(name)} | ` : ''}${target} |`;
  const extraCell = (name: string) => {
    if (!extra) return '';
    if (name.startsWith('**start')) return `~${fmt(extra.startSeconds, 0)}`;
    if (name.startsWith('RSS when')) return `~${fmt(extra.rssAtHealthyMiB, 0)} (${fmt(extra.mibPerMillionEvents, 0)} per 1M events)`;
    if (name.startsWith('**RSS after')) return `~${fmt(extra.rssAfterMiB, 0)}`;
    return '';
  };
  const spread = (xs: number[], d: number) => (xs.length > 1 ? `${fmt(median(xs), d)} (${fmt(Math.min(...xs), d)}–${fmt(Math.max(...xs), d)})` : fmt(xs[0], d));
  const lines = [
    `| | ${head.join(' | ')} | ${extra ? `journal, ${count(options.contacts)} + ${count(extra.events)}: **extrapolated** | ` : ''}target (SQLite, ${count(options.contacts)} + ${count(options.events)}) |`,
    `| --- |${cases.map(() => ' ---: |').join('')}${extra ? ' ---: |' : ''} --- |`,
    // Contact actor states: the journal store's version kept one per contact; this one keeps none.
    row('documents written: contacts + actor states + events', cases.map((c) => `${count(c.contacts)} + ${c.store === 'journal' ? count(c.contacts) : '0'} + ${count(c.events)}`)),
    row('bulk load (s)', cases.map((c) => fmt(c.loadSeconds))),
    row('files on disk (MiB)', cases.map((c) => fmt(c.diskMiB))),
    row(`**start → GET /health 200 (s)**, median of ${options.starts} (min–max)`, cases.map((c) => spread(c.startSeconds, 2)), `< ${TARGET.startSeconds} s`),
    row('RSS when healthy (MiB), median (min–max)', cases.map((c) => spread(c.rssAtHealthyMiB, 0))),
    row('**RSS after the load (MiB)**', cases.map((c) => fmt(c.rssAfterMiB)), `< ${TARGET.rssMiB} MiB`),
    row('peak RSS over its life, VmHWM (MiB)', cases.map((c) => fmt(c.peakMiB))),
    row('JS heap used after the load (MiB)', cases.map((c) => fmt(c.heapAfterMiB))),
    row(
      `POST /v1/track ×${options.track}, 8 at a time: requests/s, p50 / p99 (ms)`,
      cases.map((c) => `${fmt(c.load.track.requests / c.load.track.seconds)}, ${fmt(c.load.track.p50, 1)} / ${fmt(c.load.track.p99, 1)}`),
    ),
    ...cases[0].load.reads.map((r, i) => row(`${r.what} (ms)`, cases.map((c) => fmt(c.load.reads[i].ms)))),
  ];
  return lines.join('\n');
}

/** Whether the SQLite case at the full scale meets the targets. */
function verdict(cases: CaseOutcome[]): string[] {
  const full = cases.find((c) => c.store === 'sqlite' && c.events === options.events);
  if (!full) return [];
  const start = median(full.startSeconds);
  const rss = Math.max(full.rssAfterMiB, full.peakMiB);
  return [
    `target, start → healthy < ${TARGET.startSeconds} s at ${count(full.contacts)} + ${count(full.events)}: ${fmt(start, 2)} s (median) → ${start < TARGET.startSeconds ? 'MET' : 'MISSED'}`,
    `target, RSS < ${TARGET.rssMiB} MiB at ${count(full.contacts)} + ${count(full.events)}: ${fmt(full.rssAfterMiB)} MiB after the load, ${fmt(full.peakMiB)} MiB peak → ${rss < TARGET.rssMiB ? 'MET' : 'MISSED'}`,
  ];
}

async function main(): Promise<number> {
  const facts = machineFacts();
  const startedAt = new Date();
  const cases: CaseOutcome[] = [];
  if (options.journal) {
    const tree = await journalTree();
    for (const events of journalEvents) cases.push(await runCase('journal', tree, events));
  }
  if (options.sqlite) {
    const scales = [...new Set([sharedEvents, options.events])].filter((e) => options.journal || e === options.events);
    for (const events of scales) cases.push(await runCase('sqlite', ROOT, events));
  }
  const extra = extrapolate(cases.filter((c) => c.store === 'journal'));
  const markdown = table(cases, extra);
  const checks = cases.map((c) => {
    const bad = c.load.reads.filter((r) => r.status >= 300);
    const ok = c.load.track.failures === 0 && bad.length === 0;
    return {
      ok,
      text:
        `${c.store} ${count(c.contacts)} + ${count(c.events)}: ${c.load.track.requests - c.load.track.failures}/${c.load.track.requests} track calls 200` +
        `${c.load.track.firstFailure ? ` (first failure: ${c.load.track.firstFailure})` : ''}, reads ${bad.length ? `FAILED: ${bad.map((r) => `${r.what} ${r.status}`).join('; ')}` : 'all 2xx'}; ` +
        `${c.logLines} log lines at warn and above; load average before the starts ${c.loadBefore}`,
    };
  });
  const details = [
    ...verdict(cases),
    ...(extra
      ? [
          `journal store at ${count(options.contacts)} + ${count(options.events)} is **extrapolated**, not measured: linear in the events from its two largest cases ` +
            `(start time and RSS each along its own straight line); it would need --max-old-space-size and free memory above that RSS`,
        ]
      : []),
    ...checks.map((c) => c.text),
  ];
  console.log(`\n${markdown}\n`);
  for (const line of details) console.log(`- ${line}`);
  for (const c of cases) if (c.logLines) console.log(`\nlast lines the ${c.store} platform printed (${count(c.events)} events):\n${c.logTail}`);

  if (options.record) {
    appendResults('store', 'Store benchmark results', {
      startedAt,
      facts,
      config: [
        `config: one project, ${count(options.contacts)} contacts; journal store (commit ${JOURNAL_COMMIT}) at ${journalEvents.map(count).join(', ')} events with ` +
          `--max-old-space-size=${options.journalHeap}; SQLite at ${[...new Set([sharedEvents, options.events])].map(count).join(' and ')} events, SQLITE_CACHE_MB=${process.env.SQLITE_CACHE_MB ?? '64 (default)'}; ` +
          `${options.starts} starts per case; load: ${options.track} track calls + 8 reads`,
      ],
      note: args.note,
      body: [markdown, '', ...details.map((line) => `- ${line}`)],
    });
  }
  return checks.every((c) => c.ok) ? 0 : 1;
}

await runMain(main);
