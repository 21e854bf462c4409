/**
 * Benchmark: `POST /v1/track` throughput and latency of the embedded platform, next to a bare
 * express handler doing one EmbeddedStore write (bench/baseline-server.ts), measured in the same
 * run under the same load. See bench/README.md for how to read the numbers.
 *
 *   node --import tsx bench/track.ts [--seconds 15] [--connections 32] [--warmup 5]
 *                                    [--emails 10000] [--new-share 0.2] [--compare-ref <git ref>]
 *                                    [--modes embedded,distributed] [--webhooks 3]
 *                                    [--note "machine busy with ..."] [--no-record] [--cpu-prof]
 *   npm run bench:track -- [same options]
 *
 * Each server runs as a child process with a fresh temporary data directory; the load generator
 * (autocannon, programmatic) runs in this process. Every request body is different: a share
 * (`--new-share`) of the requests names an email not sent before (a new contact), the rest one
 * already sent (a known contact), from a pool of `--emails` addresses, seeded so every run sends
 * the same sequence; event names come from a small set; `data` has two fields. After the measured window the benchmark checks that every 2xx answer became a record
 * (platform: GET /events/stats total; baseline: GET /count): a benchmark that loses writes is wrong.
 *
 * `--modes`: the platform's modes to run, each a column (default embedded). `distributed` starts
 * `npm run start:distributed` (the whole stack: Redis, placement, scheduler, PostgreSQL, FerretDB,
 * the apps and their sidecars, on fresh data) as the server, and its CPU and memory are summed
 * over every process of the stack.
 *
 * `--compare-ref <ref>` (e.g. 6055d3e, the last commit with the journal store) checks that commit
 * out in a temporary git worktree and runs its platform and its baseline too, in the same run under
 * the same load, as further columns: this tree's platform, the ref's platform, this tree's
 * baseline, the ref's baseline.
 *
 * `--webhooks <n>` runs this tree's platform once more per mode, with n event webhook endpoints
 * subscribed to every event (`*`) and a receiver in this process answering 204 to each delivery,
 * as a further column next to the platform without any (issue #14: delivery must not slow the hot
 * path). Both runs get `WEBHOOK_ALLOW_PRIVATE=true` (the receiver is on loopback).
 *
 * Results are printed as a markdown table and appended, with the machine's facts and the command
 * line, to bench/results/track.md (unless --no-record; runs with --cpu-prof are never recorded).
 */
import { mkdtemp } from 'node:fs/promises';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { mulberry32 } from '../test/harness/prng.ts';
import { ROOT, appendResults, currentTree, treeLabel, worktreeOf, type Tree, wholeOption, startChild, stopChild, printUsage, runMain, tempDir, freePort, sleep, monotonicUs, processCpuSeconds, machineBusySeconds, usageOf, modesOption, loadAverage, machineFacts, percentile, type Child } from './common.ts';
import { NO_SAMPLES, printProfileDir, readProfileWindow } from './profile.ts';

/** How long the --webhooks run waits, after the load, for every delivery to reach the receiver. */
const CATCH_UP_WAIT_MS = 600_000;

const EVENT_NAMES = ['page_view', 'signup', 'login', 'purchase', 'feature_used'];
const PLANS = ['free', 'pro', 'team'];
const SEED = 0x6d61696c; // "mail": every run sends the same body sequence

// ---- options -----------------------------------------------------------------------------------

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '15' },
    connections: { type: 'string', default: '32' },
    warmup: { type: 'string', default: '5' },
    emails: { type: 'string', default: '10000' },
    'new-share': { type: 'string', default: '0.2' },
    'compare-ref': { type: 'string' },
    webhooks: { type: 'string', default: '0' },
    modes: { type: 'string', default: 'embedded' },
    note: { type: 'string' },
    'no-record': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) printUsage(import.meta.url);
const share = (raw: string): number => {
  const n = Number(raw);
  if (!(n > 0 && n <= 1)) throw new Error(`--new-share must be in (0, 1], got "${raw}"`);
  return n;
};
const options = {
  modes: modesOption(args.modes!),
  seconds: wholeOption('seconds', args.seconds, 1),
  connections: wholeOption('connections', args.connections, 1),
  warmup: wholeOption('warmup', args.warmup, 1),
  emails: wholeOption('emails', args.emails, 1),
  newShare: share(args['new-share']!),
  compareRef: args['compare-ref'],
  webhooks: wholeOption('webhooks', args.webhooks, 0),
  note: args.note,
  record: !args['no-record'] && !args['cpu-prof'],
  cpuProf: args['cpu-prof']!,
};

/** A server child (its log lines are its logs at warn and above). */
interface Server extends Child {
  url: string;
  /** Its CPU seconds and its memory: the process's own, or summed over the processes it started (a stack). */
  cpu(): number;
  memory(): { peakMiB: number; rssMiB: number };
}

/** Starts `node [--cpu-prof] <script>` of `tree` (startChild) with `env` and waits for GET /health. */
async function startServer(name: string, tree: Tree, script: string, env: Record<string, string>, profileDir?: string, whole = false): Promise<Server> {
  const port = await freePort();
  const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env, PORT: String(port) };
  // Embedded mode with the dev outbox, whatever the calling shell has set.
  for (const key of ['SMTP_URL', 'MAILROOM_MODE', 'REDIS_URL', 'MONGODB_URL']) delete childEnv[key];
  const server = startChild(name, script, childEnv, profileDir, { ipc: false, root: tree.root });
  const { child } = server;
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before answering /health:\n${server.logTail()}`);
    }
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${name} did not answer /health within 90 s:\n${server.logTail()}`);
    await sleep(100);
  }
  return {
    ...server,
    url,
    ...usageOf(server.pid, whole),
  };
}

// ---- HTTP set-up calls --------------------------------------------------------------------------

async function call(url: string, method: string, path: string, body?: unknown, bearer?: string): Promise<{ status: number; body: any }> {
  const headers: Record<string, string> = {};
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: res.status, body: parsed };
}

/** A user and a project over the public API; returns the project's secret key. */
async function createProject(url: string): Promise<string> {
  const email = `bench-owner-${Date.now()}@example.com`;
  const signup = await call(url, 'POST', '/auth/signup', { email, password: 'bench password 1234' });
  if (signup.status !== 201) throw new Error(`signup failed (${signup.status}): ${JSON.stringify(signup.body)}`);
  const project = await call(url, 'POST', '/projects', { name: 'Benchmark' }, signup.body.data.token);
  if (project.status !== 201) throw new Error(`project creation failed (${project.status}): ${JSON.stringify(project.body)}`);
  return project.body.data.secretKey as string;
}

/** `n` event webhook endpoints of the project, subscribed to every event, posting to `receiver`. */
async function createWebhooks(url: string, secretKey: string, n: number, receiver: string): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await call(url, 'POST', '/webhooks', { url: `${receiver}/hook-${i}`, events: ['*'], description: `bench ${i}` }, secretKey);
    if (res.status !== 201) throw new Error(`webhook creation failed (${res.status}): ${JSON.stringify(res.body)}`);
  }
}

/** A receiver of event webhook deliveries that answers 204 at once and counts them. */
async function startReceiver(): Promise<{ url: string; received: () => number; close: () => Promise<void> }> {
  let received = 0;
  const server: HttpServer = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// ---- request bodies -----------------------------------------------------------------------------

/**
 * The bodies of the track requests. A fixed share of them (`newShare`) names an email never sent
 * before (a new contact, until the pool of `emails` addresses is used up); the others name one
 * already sent (a known contact), picked uniformly. So the mix of new and known contacts does not
 * depend on how fast the server is, and two runs, or two servers, get the same sequence.
 */
class TrackBodies {
  readonly #random = mulberry32(SEED);
  readonly #emails: number;
  readonly #newShare: number;
  #used = 0;
  /** Bodies built, and how many of them named an email for the first time (a new contact). */
  built = 0;
  firstTime = 0;

  constructor(emails: number, newShare: number) {
    this.#emails = emails;
    this.#newShare = newShare;
  }

  /** Whether every email of the pool has been used (from then on, every request names a known one). */
  get exhausted(): boolean {
    return this.#used >= this.#emails;
  }

  next(): string {
    let i: number;
    if (this.#used === 0 || (this.#random() < this.#newShare && this.#used < this.#emails)) {
      i = this.#used++;
      this.firstTime++;
    } else {
      i = Math.floor(this.#random() * this.#used);
    }
    this.built++;
    const event = EVENT_NAMES[Math.floor(this.#random() * EVENT_NAMES.length)];
    const data = { plan: PLANS[i % PLANS.length], amount: Math.floor(this.#random() * 10_000) / 100 };
    return JSON.stringify({ email: `bench-${i}@example.com`, event, data });
  }
}

// ---- load ---------------------------------------------------------------------------------------

interface Load {
  /** Seconds from the first request to the last response. */
  seconds: number;
  ok: number;
  non2xx: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  /** Response times of the 2xx answers, ms, sorted. */
  latencies: Float64Array;
  bodies: number;
  firstTimeEmails: number;
  poolExhausted: boolean;
  cpu: CpuWindow;
  /** The window on the monotonic clock, µs (the clock of V8's CPU profiles). */
  monotonicUs: { startUs: number; endUs: number };
}

/** Internals of autocannon 9's http client that a graceful stop needs (see drain below). */
interface DrainableClient {
  reqsMade: number;
  responseMax?: number;
}

/**
 * Drives POST /v1/track for `seconds` with `connections` keep-alive connections, one request in
 * flight per connection. At the end it drains instead of cutting: each connection finishes the
 * request it has in flight and sends no other, so every request sent is answered and the count of
 * 2xx answers can be compared with what the server recorded. (autocannon's own duration stop
 * destroys the sockets with requests in flight, which the server may still have recorded.)
 */
async function drive(server: Server, bearer: string, seconds: number, connections: number, bodies: TrackBodies): Promise<Load> {
  const clients: DrainableClient[] = [];
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let ok = 0;
  let non2xx = 0;
  let lastResponse = 0;
  const bodiesBefore = bodies.built;
  const firstTimeBefore = bodies.firstTime;
  const cpuStart = cpuSnapshot(server);
  const started = performance.now();
  const startUs = monotonicUs();

  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${server.url}/v1/track`,
        method: 'POST',
        connections,
        pipelining: 1,
        // The drain ends the run; this is only a backstop.
        duration: seconds + 120,
        timeout: 10,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
        requests: [{ setupRequest: (request) => ({ ...request, body: bodies.next() }) }],
        setupClient: (client) => {
          clients.push(client as unknown as DrainableClient);
        },
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      lastResponse = performance.now();
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
      if (statusCode >= 200 && statusCode < 300) {
        ok++;
        latencies.push(responseTime);
      } else {
        non2xx++;
      }
    });
    const drain = setTimeout(() => {
      // A client whose reqsMade has reached responseMax destroys itself instead of sending its
      // next request, i.e. right after the response to the one in flight arrives.
      for (const client of clients) client.responseMax = Math.max(1, client.reqsMade);
    }, seconds * 1000);
    // A server that stops answering must not hold the run forever: cut it after 30 s of drain.
    const backstop = setTimeout(() => instance.stop(), seconds * 1000 + 30_000);
    const died = () => {
      clearTimeout(drain);
      clearTimeout(backstop);
      instance.stop();
      reject(new Error(`${server.name} exited during the load:\n${server.logTail()}`));
    };
    server.child.once('exit', died);
    instance.once('done', () => {
      clearTimeout(drain);
      clearTimeout(backstop);
      server.child.off('exit', died);
    });
  });

  // autocannon reports up to a second after the drain ends; the window ends at the last response.
  const windowSeconds = ((lastResponse || performance.now()) - started) / 1000;
  const cpu = cpuWindow(cpuStart, cpuSnapshot(server), windowSeconds);
  return {
    seconds: windowSeconds,
    monotonicUs: { startUs, endUs: startUs + Math.round(windowSeconds * 1e6) },
    ok,
    non2xx,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    latencies: Float64Array.from(latencies).sort(),
    bodies: bodies.built - bodiesBefore,
    firstTimeEmails: bodies.firstTime - firstTimeBefore,
    poolExhausted: bodies.exhausted,
    cpu,
  };
}

// ---- measurements of processes and machine ---------------------------------------------------

interface CpuSnapshot {
  server: number; // seconds of CPU
  self: number; // seconds of CPU of this process (the load generator)
  machineBusy: number; // seconds of busy CPU summed over all cores
}
interface CpuWindow {
  /** Average cores busy over the window. */
  server: number;
  loadGenerator: number;
  others: number;
  /** Server CPU seconds in the window. */
  serverSeconds: number;
}


function cpuSnapshot(server: Server): CpuSnapshot {
  return { server: server.cpu(), self: processCpuSeconds('self'), machineBusy: machineBusySeconds() };
}

/** CPU used between two snapshots, as cores busy over `wall` seconds (the load's window). */
function cpuWindow(a: CpuSnapshot, b: CpuSnapshot, wall: number): CpuWindow {
  const server = b.server - a.server;
  const self = b.self - a.self;
  const busy = b.machineBusy - a.machineBusy;
  return { server: server / wall, loadGenerator: self / wall, others: Math.max(0, busy - server - self) / wall, serverSeconds: server };
}

/** VmHWM (peak resident set) and VmRSS of a live process, in MiB. */

/** An argument as a POSIX shell would need it typed. */

// ---- one server's run ---------------------------------------------------------------------------

interface Outcome {
  name: string;
  /** The column's heading. */
  label: string;
  warmup: Load;
  load: Load;
  /** VmRSS once started and set up, before any load. */
  startMiB: number;
  peakMiB: number;
  rssMiB: number;
  recorded: number;
  acknowledged: number;
  logLines: number;
  loadBefore: string;
  profile?: string;
  /** With --webhooks: deliveries the receiver got while this server ran (warm-up, window, drain). */
  deliveries?: number;
  /** With --webhooks: what the receiver had when the window ended, and how long the rest took to come (or null: not within the wait). */
  catchUp?: { atWindowEnd: number; expected: number; seconds: number | null };
}

async function runOne(
  name: string,
  label: string,
  tree: Tree,
  script: string,
  env: Record<string, string>,
  setup: (server: Server) => Promise<string>,
  recordedCount: (server: Server, bearer: string) => Promise<number>,
  profileDir: string | undefined,
  whole = false,
  afterLoad?: (acknowledged: number) => Promise<Partial<Outcome>>,
): Promise<Outcome> {
  const loadBefore = loadAverage();
  console.error(`[${name}] starting ${script}${tree.root === ROOT ? '' : ` of ${tree.commit}`} (load average ${loadBefore})`);
  const server = await startServer(name, tree, script, env, profileDir, whole);
  try {
    const bearer = await setup(server);
    const startMiB = server.memory().rssMiB;
    const bodies = new TrackBodies(options.emails, options.newShare);
    console.error(`[${name}] warm-up ${options.warmup} s, ${options.connections} connections`);
    const warmup = await drive(server, bearer, options.warmup, options.connections, bodies);
    console.error(`[${name}] measuring ${options.seconds} s`);
    const load = await drive(server, bearer, options.seconds, options.connections, bodies);
    const { peakMiB, rssMiB } = server.memory();
    const acknowledged = warmup.ok + load.ok;
    const recorded = await settledCount(() => recordedCount(server, bearer), acknowledged);
    console.error(`[${name}] ${load.ok} × 2xx in ${load.seconds.toFixed(1)} s; ${recorded}/${acknowledged} acknowledged writes recorded`);
    const more = afterLoad ? await afterLoad(acknowledged) : {};
    return { name, label, warmup, load, startMiB, peakMiB, rssMiB, recorded, acknowledged, logLines: server.logLines(), loadBefore, ...more };
  } catch (err) {
    console.error(`[${name}] failed; last server output:\n${server.logTail()}`);
    throw err;
  } finally {
    await stopChild(server.child);
  }
}

/** The recorded count, polled until it reaches `expected` or stops changing (async writes settle). */
async function settledCount(count: () => Promise<number>, expected: number): Promise<number> {
  let last = await count();
  for (let stable = 0; last !== expected && stable < 10; ) {
    await sleep(500);
    const now = await count();
    stable = now === last ? stable + 1 : 0;
    last = now;
  }
  return last;
}

// ---- profiles -----------------------------------------------------------------------------------

/** The summary of a .cpuprofile over the measured window only (bench/profile.ts). */
function summarizeProfile(file: string, window: { startUs: number; endUs: number }): string {
  const sampled = readProfileWindow(file, window);
  if (!sampled) return NO_SAMPLES;
  const { total, top } = sampled;
  return [
    `${total} samples in the measured window`,
    `self time by module:\n${top(sampled.selfByModule, 15)}`,
    `self time by function:\n${top(sampled.selfByFunction, 25)}`,
    `inclusive time of the repo's functions:\n${top(sampled.inclusive, 25)}`,
  ].join('\n');
}

// ---- report -------------------------------------------------------------------------------------

/** One column per outcome, then the ratios (numerator, denominator) asked for. */
function table(outcomes: Outcome[], ratios: [Outcome, Outcome, string][]): string {
  const rows: [string, (o: Outcome) => number, number, boolean][] = [
    // label, value, decimals, show ratio
    ['requests/s (2xx)', (o) => o.load.ok / o.load.seconds, 0, true],
    ['latency p50 (ms)', (o) => percentile(o.load.latencies, 0.5), 2, true],
    ['latency p90 (ms)', (o) => percentile(o.load.latencies, 0.9), 2, true],
    ['latency p99 (ms)', (o) => percentile(o.load.latencies, 0.99), 2, true],
    ['latency max (ms)', (o) => percentile(o.load.latencies, 1), 1, true],
    ['2xx responses', (o) => o.load.ok, 0, false],
    ['non-2xx responses', (o) => o.load.non2xx, 0, false],
    ['errors (of which timeouts)', (o) => o.load.errors, 0, false],
    ['RSS before load (MiB)', (o) => o.startMiB, 0, true],
    ['peak RSS, VmHWM (MiB)', (o) => o.peakMiB, 0, true],
    ['server CPU (cores busy)', (o) => o.load.cpu.server, 2, true],
    ['server CPU per request (ms)', (o) => (1000 * o.load.cpu.serverSeconds) / Math.max(1, o.load.ok + o.load.non2xx), 3, true],
    ['load generator CPU (cores)', (o) => o.load.cpu.loadGenerator, 2, false],
    ['other processes CPU (cores)', (o) => o.load.cpu.others, 2, false],
  ];
  const fmt = (n: number, decimals: number) => (Number.isFinite(n) ? n.toFixed(decimals) : 'n/a');
  const lines = [
    `| metric | ${[...outcomes.map((o) => o.label), ...ratios.map(([, , label]) => label)].join(' | ')} |`,
    `| --- | ${[...outcomes, ...ratios].map(() => '---:').join(' | ')} |`,
  ];
  for (const [label, value, decimals, ratio] of rows) {
    const cells = outcomes.map((o) => fmt(value(o), decimals) + (label.startsWith('errors') ? ` (${o.load.timeouts})` : ''));
    for (const [a, b] of ratios) cells.push(ratio && value(b) ? `${(value(a) / value(b)).toFixed(2)}×` : '');
    lines.push(`| ${label} | ${cells.join(' | ')} |`);
  }
  return lines.join('\n');
}

function verification(o: Outcome, what: string): { ok: boolean; text: string } {
  const ok = o.recorded === o.acknowledged;
  const mark = ok ? 'OK' : 'MISMATCH: the benchmark is wrong (writes lost or invented)';
  return {
    ok,
    text: `${o.name}: ${o.acknowledged} × 2xx (warm-up ${o.warmup.ok} + window ${o.load.ok}) vs ${o.recorded} ${what}: ${mark}`,
  };
}

function statusLine(o: Outcome): string {
  const statuses = Object.entries(o.load.statuses)
    .map(([code, n]) => `${code}×${n}`)
    .join(', ');
  const newShare = o.load.bodies ? ((100 * o.load.firstTimeEmails) / o.load.bodies).toFixed(0) : '0';
  return (
    `${o.name}: window ${o.load.seconds.toFixed(2)} s, statuses ${statuses || 'none'}; ` +
    `${newShare}% of the window's requests named an email for the first time (a new contact on the platform)` +
    `${o.load.poolExhausted ? `, the pool of ${options.emails} emails ran out during the run` : ''}; ` +
    `server printed ${o.logLines} log lines; load average before start ${o.loadBefore}` +
    (o.deliveries !== undefined ? `; the webhook receiver got ${o.deliveries} deliveries by the end of the run` : '') +
    (o.catchUp
      ? `, ${o.catchUp.atWindowEnd} of the ${o.catchUp.expected} (${options.webhooks} per acknowledged event) when the load stopped; ` +
        (o.catchUp.seconds === null ? `not all within ${CATCH_UP_WAIT_MS / 1000} s after` : `the rest within ${o.catchUp.seconds.toFixed(1)} s after`)
      : '')
  );
}

// ---- main ---------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const facts = machineFacts();
  const startedAt = new Date();
  const profileDir = options.cpuProf ? await mkdtemp(join(tmpdir(), 'mailroom-bench-profiles-')) : undefined;
  const here = currentTree();
  const trees = [here, ...(options.compareRef ? [await worktreeOf(options.compareRef)] : [])];
  const suffix = (tree: Tree) => (tree === here ? '' : `@${tree.commit}`);

  // The platforms first, then the baselines; with --compare-ref each one of this tree, then the ref's.
  const platforms: Outcome[] = [];
  const withWebhooks: Outcome[] = [];
  const receiver = options.webhooks > 0 ? await startReceiver() : undefined;
  const webhookEnv: Record<string, string> = receiver ? { WEBHOOK_ALLOW_PRIVATE: 'true' } : {};
  const eventsRecorded = async (server: Server, bearer: string) => {
    const stats = await call(server.url, 'GET', '/events/stats', undefined, bearer);
    if (stats.status !== 200) throw new Error(`GET /events/stats failed (${stats.status}): ${JSON.stringify(stats.body)}`);
    return stats.body.data.total as number;
  };
  for (const mode of options.modes) {
    const distributed = mode === 'distributed';
    const script = distributed ? 'scripts/start-distributed.ts' : 'apps/api/main.ts';
    for (const tree of trees) {
      const name = `platform${distributed ? ' distributed' : ''}${suffix(tree)}`;
      platforms.push(
        await runOne(
          name,
          distributed ? `platform (distributed, ${tree === here ? 'this tree' : tree.commit}: CPU and memory of every process of the stack)` : `platform (embedded, ${treeLabel(tree)})`,
          tree,
          script,
          { DATA_DIR: await tempDir('mailroom-bench-platform-'), API_RATE_PER_MINUTE: '0', LOG_LEVEL: 'warn', ...webhookEnv },
          (server) => createProject(server.url),
          eventsRecorded,
          profileDir && join(profileDir, name.replaceAll(' ', '-')),
          distributed,
        ),
      );
    }
    if (receiver) {
      const name = `platform${distributed ? ' distributed' : ''} +${options.webhooks} webhooks`;
      const before = receiver.received();
      const outcome = await runOne(
        name,
        `platform (${distributed ? 'distributed' : 'embedded'}, this tree, ${options.webhooks} event webhook endpoints on every event)`,
        here,
        script,
        { DATA_DIR: await tempDir('mailroom-bench-platform-'), API_RATE_PER_MINUTE: '0', LOG_LEVEL: 'warn', ...webhookEnv },
        async (server) => {
          const key = await createProject(server.url);
          await createWebhooks(server.url, key, options.webhooks, receiver.url);
          return key;
        },
        eventsRecorded,
        profileDir && join(profileDir, name.replaceAll(' ', '-')),
        distributed,
        // Deliveries wait while the load saturates the platform: how long the backlog takes once it ends.
        async (acknowledged) => {
          const expected = options.webhooks * acknowledged;
          const atWindowEnd = receiver.received() - before;
          const started = performance.now();
          while (receiver.received() - before < expected && performance.now() - started < CATCH_UP_WAIT_MS) await sleep(250);
          const done = receiver.received() - before >= expected;
          return { catchUp: { atWindowEnd, expected, seconds: done ? (performance.now() - started) / 1000 : null } };
        },
      );
      outcome.deliveries = receiver.received() - before;
      withWebhooks.push(outcome);
    }
  }
  await receiver?.close();
  const baselines: Outcome[] = [];
  for (const tree of trees) {
    baselines.push(
      await runOne(
        `baseline${suffix(tree)}`,
        `baseline (express + 1 insertOne, ${treeLabel(tree)})`,
        tree,
        'bench/baseline-server.ts',
        { DATA_DIR: await tempDir('mailroom-bench-baseline-') },
        async () => 'baseline-needs-no-key',
        async (server) => (await call(server.url, 'GET', '/count')).body.data.total as number,
        profileDir && join(profileDir, `baseline${suffix(tree)}`),
      ),
    );
  }
  const outcomes = [...platforms, ...withWebhooks, ...baselines];
  const [baseline, refBaseline] = baselines;
  const ratios: [Outcome, Outcome, string][] = [];
  for (const mode of options.modes) {
    const [platform, refPlatform] = platforms.filter((o) => o.name.includes(' distributed') === (mode === 'distributed'));
    const what = mode === 'distributed' ? 'distributed' : 'platform';
    ratios.push([platform, baseline, `${what} / baseline`]);
    if (refPlatform) ratios.push([platform, refPlatform, `${what} / ${what} @ ${refPlatform.name.split('@')[1]}`]);
    const hooked = withWebhooks.find((o) => o.name.includes(' distributed') === (mode === 'distributed'));
    if (hooked) ratios.push([hooked, platform, `${what} +${options.webhooks} webhooks / ${what}`]);
  }
  if (refBaseline) ratios.push([baseline, refBaseline, `baseline / baseline @ ${refBaseline.name.split('@')[1]}`]);

  const checks = [
    ...[...platforms, ...withWebhooks].map((o) => verification(o, 'events recorded (GET /events/stats total)')),
    ...baselines.map((o) => verification(o, 'documents written (GET /count)')),
  ];
  const markdown = table(outcomes, ratios);
  const details = [...outcomes.map(statusLine), ...checks.map((c) => c.text)];

  console.log(`\n${markdown}\n`);
  for (const line of details) console.log(`- ${line}`);

  if (profileDir) {
    for (const outcome of outcomes) {
      const name = outcome.name;
      printProfileDir(join(profileDir, name.replaceAll(' ', '-')), `the ${name} server`, (file) => summarizeProfile(file, outcome.load.monotonicUs));
    }
    console.log('\n(profiled runs are not recorded: the profiler slows the servers down)');
  }

  if (options.record) {
    appendResults('track', '/v1/track benchmark results', {
      startedAt,
      facts,
      config: [
        `config: ${options.seconds} s measured after ${options.warmup} s warm-up, ${options.connections} connections, ` +
          `1 request in flight each, ${options.emails} distinct emails at most, ${options.newShare * 100}% of requests for a new one`,
        ...trees
          .filter((tree) => tree !== here)
          .map((tree) => `compared with: \`--compare-ref ${tree.ref}\` = ${tree.commit} (${treeLabel(tree)}), its platform and baseline run from a git worktree of that commit`),
      ],
      context: [`load average before each server: ${outcomes.map((o) => `${o.name} ${o.loadBefore}`).join('; ')}`],
      note: options.note,
      body: [markdown, '', ...details.map((line) => `- ${line}`)],
    });
  }
  return checks.every((c) => c.ok) ? 0 : 1;
}

await runMain(main);
