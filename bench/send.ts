/**
 * Benchmark: sending email. In one run, each as its own phase, into one loopback SMTP sink:
 *
 * 1. Yardsticks: raw nodemailer, pooled (5 connections), sending the same email into the sink,
 *    (a0) with Nagle forced on (nodemailer >= 10.1 turns it off itself), (a) plain (nodemailer's
 *    defaults), (b) with TCP_NODELAY, (c) with nodemailer's built-in DKIM from a PEM string,
 *    (d) DKIM + NODELAY, and three steps towards the mailer: (e) DKIM from a KeyObject parsed
 *    once + NODELAY, (f) the mailer's own transport module, (g) the mailer's compose() + its
 *    transport. Each runs in its own child process (bench/send-yardstick.ts).
 * 2. The platform, embedded, as a child process exactly as `npm start` runs it (EMAIL_RATE_PER_SECOND=0,
 *    API_RATE_PER_MINUTE=0, SMTP_URL at the sink, DNS_SERVERS at a DNS server run here): a user
 *    verified through the email it receives, a project, a sending domain verified through DNS;
 *    then `POST /v1/send` driven by autocannon, one recipient per request, with template data.
 *    Measured: the acceptance rate (requests/s, latency) and the mailer's throughput, from the
 *    first acceptance to the Nth email counted by the sink (DKIM-signed, tracked, CSS-inlined,
 *    exactly as in production), the platform's CPU and peak RSS.
 * 3. Checks that the sink counted exactly the emails sent or accepted (none lost, none twice),
 *    prints a markdown table and appends a dated section to bench/results/send.md.
 *
 *   node --import tsx bench/send.ts [--emails 2000] [--warmup 200] [--connections 32]
 *                                   [--in-flight 32] [--yardsticks plain,nodelay,...|none]
 *                                   [--no-platform] [--email-rate 0]
 *                                   [--note "machine busy with ..."] [--no-record] [--cpu-prof]
 *   npm run bench:send -- [same options]
 *
 * The sink (bench/send-sink.ts) runs in its own process: a minimal smtp-server that drains each
 * message and counts it by recipient. See bench/README.md for how to read the numbers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { appendFileSync, existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { authenticate } from 'mailauth';
import PostalMime from 'postal-mime';
import { ApiClient } from '../test/harness/client.ts';
import { startDnsServer, type DnsServer } from '../test/harness/dns-server.ts';
import { publishRecords, type DomainRecord } from '../test/harness/domains.ts';
import {
  BODY,
  SENDER_NAME,
  SUBJECT,
  VARIANTS,
  dataOf,
  recipientOf,
  type SinkStats,
  type Variant,
  type YardstickConfig,
  type YardstickResult,
} from './send-shared.ts';
import { ROOT, adoptChild, onCleanup, stopChild, cleanup, tempDir, freePort, sleep, monotonicUs, processCpuSeconds, machineBusySeconds, memoryOf, loadAverage, machineFacts, percentile, shortUrl, shellQuote } from './common.ts';

const RESULTS_FILE = join(ROOT, 'bench', 'results', 'send.md');
const POOL_SIZE = 5; // the mailer's (apps/mailer/transport.ts)
const YARDSTICK_DOMAIN = 'yardstick.example';
const SELECTOR = 'bench';

const LABELS: Record<Variant, string> = {
  nagle: '(a0) pool ×5, Nagle forced on',
  plain: '(a) nodemailer pool ×5 (its defaults)',
  nodelay: '(b) pool ×5 + TCP_NODELAY',
  dkim: '(c) pool ×5 + DKIM (PEM string)',
  'dkim-nodelay': '(d) pool ×5 + DKIM (PEM) + NODELAY',
  'dkim-key-nodelay': '(e) pool ×5 + DKIM (KeyObject) + NODELAY',
  transport: "(f) the mailer's transport (compile + sign, raw through the pool)",
  compose: "(g) the mailer's compose() + buildMessage() + (f)",
};

// ---- options -----------------------------------------------------------------------------------

const { values: args } = parseArgs({
  options: {
    emails: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '200' },
    connections: { type: 'string', default: '32' },
    'in-flight': { type: 'string', default: '32' },
    yardsticks: { type: 'string', default: VARIANTS.join(',') },
    'no-platform': { type: 'boolean', default: false },
    'email-rate': { type: 'string', default: '0' },
    note: { type: 'string' },
    'no-record': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) {
  console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('*/')[0]);
  process.exit(0);
}
const positive = (name: string, raw: string, allowZero = false): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || (n === 0 && !allowZero)) throw new Error(`--${name} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got "${raw}"`);
  return n;
};
const yardsticks = (raw: string): Variant[] => {
  if (raw === 'none' || raw === '') return [];
  const names = raw.split(',').map((s) => s.trim());
  for (const name of names) if (!(VARIANTS as readonly string[]).includes(name)) throw new Error(`--yardsticks: unknown "${name}"; one of ${VARIANTS.join(', ')} or none`);
  return VARIANTS.filter((v) => names.includes(v));
};
const options = {
  emails: positive('emails', args.emails!),
  warmup: positive('warmup', args.warmup!, true),
  connections: positive('connections', args.connections!),
  inFlight: positive('in-flight', args['in-flight']!),
  yardsticks: yardsticks(args.yardsticks!),
  platform: !args['no-platform'],
  emailRate: positive('email-rate', args['email-rate']!, true),
  note: args.note,
  record: !args['no-record'] && !args['cpu-prof'],
  cpuProf: args['cpu-prof']!,
};

// ---- child processes and temp dirs, cleaned up on every way out ---------------------------------








interface Child {
  name: string;
  child: ChildProcess;
  pid: number;
  logLines(): number;
  logTail(): string;
}

/**
 * `node [--cpu-prof] --import tsx --import ./bench/orphan-guard.ts <script>` with an IPC channel.
 * The orphan guard ends the child if this process dies without stopping it.
 */
function startChild(name: string, script: string, env: NodeJS.ProcessEnv, profileDir?: string): Child {
  const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', '--import', './bench/orphan-guard.ts', script], {
    cwd: ROOT,
    env,
    stdio: ['pipe', 'pipe', 'pipe', 'ipc'],
  });
  adoptChild(child);
  let lines = 0;
  let tail: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      lines++;
      tail.push(line);
      if (tail.length > 20) tail = tail.slice(-20);
    }
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  return { name, child, pid: child.pid!, logLines: () => lines, logTail: () => tail.join('\n') };
}

/** A child's first IPC message of `type`; rejects if it exits first. */
function messageOf<T>(c: Child, type: string, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const onMessage = (msg: { type?: string }) => {
      if (msg?.type !== type) return;
      done();
      resolve(msg as T);
    };
    const onExit = (code: number | null, signal: string | null) => {
      done();
      reject(new Error(`${c.name} exited (${code ?? signal}) before sending "${type}":\n${c.logTail()}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${c.name} sent no "${type}" within ${timeoutMs / 1000} s:\n${c.logTail()}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      c.child.off('message', onMessage);
      c.child.off('exit', onExit);
    };
    c.child.on('message', onMessage);
    c.child.once('exit', onExit);
  });
}

// ---- the sink -----------------------------------------------------------------------------------

class Sink {
  readonly #pending = new Map<number, (stats: SinkStats) => void>();
  #next = 1;

  readonly proc: Child;
  readonly port: number;

  private constructor(proc: Child, port: number) {
    this.proc = proc;
    this.port = port;
    proc.child.on('message', (msg: { id?: number; stats?: SinkStats }) => {
      if (msg?.id === undefined || !msg.stats) return;
      this.#pending.get(msg.id)?.(msg.stats);
      this.#pending.delete(msg.id);
    });
  }

  static async start(): Promise<Sink> {
    const proc = startChild('sink', 'bench/send-sink.ts', { ...process.env });
    const { port } = await messageOf<{ port: number }>(proc, 'ready', 60_000);
    return new Sink(proc, port);
  }

  get url(): string {
    return `smtp://127.0.0.1:${this.port}`;
  }

  stats(key: string, detail = false): Promise<SinkStats> {
    if (this.proc.child.exitCode !== null) return Promise.reject(new Error(`the sink exited:\n${this.proc.logTail()}`));
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#pending.set(id, resolve);
      this.proc.child.send({ id, type: 'stats', key, detail });
    });
  }

  /**
   * Polls until `key` has counted `count` messages; gives up once nothing new arrived for
   * `stallMs` (the caller's count check then fails). `onReached` runs as soon as it is seen.
   */
  async waitFor(key: string, count: number, stallMs: number, onReached?: () => void): Promise<SinkStats> {
    let last = await this.stats(key);
    let lastChange = Date.now();
    while (last.count < count && Date.now() - lastChange < stallMs) {
      await sleep(20);
      const now = await this.stats(key);
      if (now.count !== last.count) lastChange = Date.now();
      last = now;
    }
    onReached?.();
    return last;
  }
}

// ---- CPU and memory -------------------------------------------------------------------------------



interface CpuSnapshot {
  sender: number;
  sink: number;
  self: number;
  machineBusy: number;
  atUs: number;
}

const cpuSnapshot = (senderPid: number, sinkPid: number): CpuSnapshot => ({
  sender: processCpuSeconds(senderPid),
  sink: processCpuSeconds(sinkPid),
  self: processCpuSeconds('self'),
  machineBusy: machineBusySeconds(),
  atUs: monotonicUs(),
});

interface CpuWindow {
  /** CPU seconds in the window. */
  sender: number;
  sink: number;
  self: number;
  /** The rest of the machine's busy CPU seconds (other processes: the noise). */
  others: number;
  wall: number;
}

function cpuWindow(a: CpuSnapshot, b: CpuSnapshot, senderSeconds?: number): CpuWindow {
  const sender = senderSeconds ?? b.sender - a.sender;
  const sink = b.sink - a.sink;
  const self = b.self - a.self;
  const busy = b.machineBusy - a.machineBusy;
  return { sender, sink, self, others: Math.max(0, busy - sender - sink - self), wall: (b.atUs - a.atUs) / 1e6 };
}



// ---- phase 1: yardsticks ------------------------------------------------------------------------

interface SinkPhase {
  name: string;
  emails: number;
  /** Emails ÷ seconds from the first send (or acceptance) to the last email counted by the sink. */
  seconds: number;
  cpu: CpuWindow;
  stats: SinkStats;
  check: { ok: boolean; text: string };
  loadBefore: string;
  window: { startUs: number; endUs: number };
  profileDir?: string;
}

async function runYardstick(variant: Variant, sink: Sink, privateKeyPem: string, profileRoot: string | undefined): Promise<SinkPhase> {
  const key = `y${VARIANTS.indexOf(variant)}`;
  const config: YardstickConfig = {
    variant,
    smtpUrl: sink.url,
    key,
    warmupKey: `${key}w`,
    count: options.emails,
    warmup: options.warmup,
    inFlight: options.inFlight,
    poolSize: POOL_SIZE,
    domain: YARDSTICK_DOMAIN,
    selector: SELECTOR,
    privateKeyPem,
    publicUrl: 'http://127.0.0.1:3000',
  };
  const loadBefore = loadAverage();
  console.error(`[${variant}] ${LABELS[variant]}: ${options.warmup} warm-up + ${options.emails} measured emails (load average ${loadBefore})`);
  const profileDir = profileRoot && join(profileRoot, variant);
  const env: NodeJS.ProcessEnv = { ...process.env, BENCH_YARDSTICK: JSON.stringify(config) };
  const proc = startChild(variant, 'bench/send-yardstick.ts', env, profileDir);
  // The sink's CPU is read around the whole child (warm-up included), scaled to the window below.
  const sinkBefore = processCpuSeconds(sink.proc.pid);
  const busyBefore = machineBusySeconds();
  const selfBefore = processCpuSeconds('self');
  const senderBefore = monotonicUs();
  const result = await messageOf<YardstickResult>(proc, 'result', 30 * 60_000);
  const exited = proc.child.exitCode !== null ? Promise.resolve() : new Promise<void>((resolve) => proc.child.once('exit', () => resolve()));
  await exited;
  await stopChild(proc.child); // exited already: only forgets it
  if (result.errors) throw new Error(`[${variant}] ${result.errors} sends failed, first: ${result.firstError}\n${proc.logTail()}`);
  await sink.waitFor(key, options.emails, 10_000);
  await sleep(300); // a late duplicate would show here
  const settled = await sink.stats(key);
  const seconds = ((settled.lastUs ?? result.endUs) - result.startUs) / 1e6;
  // Whole-child totals for sink, self and machine, prorated to the measured window's share.
  const total = (monotonicUs() - senderBefore) / 1e6;
  const share = Math.min(1, seconds / total);
  const sinkCpu = (processCpuSeconds(sink.proc.pid) - sinkBefore) * share;
  const self = (processCpuSeconds('self') - selfBefore) * share;
  const busy = (machineBusySeconds() - busyBefore) * share;
  const cpu: CpuWindow = { sender: result.cpuSeconds, sink: sinkCpu, self, others: Math.max(0, busy - result.cpuSeconds - sinkCpu - self), wall: seconds };
  const dkimExpected = variant.startsWith('dkim') || variant === 'transport' || variant === 'compose';
  const ok =
    settled.count === options.emails &&
    settled.distinct === options.emails &&
    settled.duplicates === 0 &&
    settled.signed === (dkimExpected ? options.emails : 0);
  const text =
    `${LABELS[variant]}: sent ${options.emails}, sink counted ${settled.count} (${settled.distinct} distinct recipients, ${settled.duplicates} duplicates), ` +
    `${settled.signed} DKIM-signed${dkimExpected ? '' : ' (none expected)'}, ${(settled.bytes / Math.max(1, settled.count)).toFixed(0)} bytes each on average: ` +
    (ok ? 'OK' : 'MISMATCH: the benchmark is wrong (email lost, repeated or not signed as expected)');
  console.error(`[${variant}] ${(options.emails / seconds).toFixed(0)} emails/s`);
  return {
    name: LABELS[variant],
    emails: options.emails,
    seconds,
    cpu,
    stats: settled,
    check: { ok, text },
    loadBefore,
    window: { startUs: result.startUs, endUs: settled.lastUs ?? result.endUs },
    profileDir,
  };
}

// ---- phase 2: the platform ----------------------------------------------------------------------

interface Platform {
  proc: Child;
  url: string;
  api: ApiClient;
}

async function startPlatform(sink: Sink, dnsServer: DnsServer, profileDir: string | undefined): Promise<Platform> {
  const dataDir = await tempDir('mailroom-bench-send-');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    PUBLIC_URL: url,
    DATA_DIR: dataDir,
    SMTP_URL: sink.url,
    DNS_SERVERS: dnsServer.address,
    EMAIL_RATE_PER_SECOND: String(options.emailRate),
    API_RATE_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
  };
  // Embedded mode, whatever the calling shell has set.
  for (const key of ['MAILROOM_MODE', 'REDIS_URL', 'MONGODB_URL', 'LINK_SECRET', 'SYSTEM_FROM']) delete env[key];
  const proc = startChild('platform', 'apps/api/main.ts', env, profileDir);
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`the platform exited (${proc.child.exitCode ?? proc.child.signalCode}) before answering /health:\n${proc.logTail()}`);
    }
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the platform did not answer /health within 90 s:\n${proc.logTail()}`);
    await sleep(100);
  }
  return { proc, url, api: new ApiClient(url) };
}

/**
 * A verified user (through the verification email the sink receives), a project, and a sending
 * domain verified through the DNS server, all over the public API. Returns the secret key and
 * the sending domain.
 */
async function setUp(platform: Platform, sink: Sink, dnsServer: DnsServer): Promise<{ secretKey: string; domain: string }> {
  const { api } = platform;
  const email = recipientOf('owner', 1);
  const password = 'bench password 1234';
  const signup = await api.post('/auth/signup', { email, password });
  if (signup.status !== 201) throw new Error(`signup failed (${signup.status}): ${JSON.stringify(signup.body)}`);
  const mail = await sink.waitFor('owner', 1, 30_000);
  if (!mail.sample) throw new Error(`no verification email reached the sink:\n${platform.proc.logTail()}`);
  const parsed = await PostalMime.parse(Buffer.from(mail.sample, 'base64'));
  const link = /https?:\/\/\S+\/auth\/verify\?token=[\w%-]+/.exec(parsed.text ?? '')?.[0];
  if (!link) throw new Error('no verification link in the verification email');
  const verified = await api.get(link.slice(link.indexOf('/auth/')));
  if (verified.status !== 200) throw new Error(`email verification failed (${verified.status}): ${JSON.stringify(verified.body)}`);
  const login = await api.post('/auth/login', { email, password });
  if (login.status !== 200) throw new Error(`login failed (${login.status}): ${JSON.stringify(login.body)}`);
  const as = { auth: login.body.data.token as string };
  const project = await api.post('/projects', { name: 'Send benchmark' }, as);
  if (project.status !== 201) throw new Error(`project creation failed (${project.status}): ${JSON.stringify(project.body)}`);
  const domain = `bench-${Date.now().toString(36)}.example`;
  const added = await api.post('/domains', { projectId: project.body.data.id, domain }, as);
  if (added.status !== 201) throw new Error(`adding ${domain} failed (${added.status}): ${JSON.stringify(added.body)}`);
  publishRecords(dnsServer, added.body.data.records as DomainRecord[]);
  const verify = await api.get(`/domains/${added.body.data.id}/verify`, as);
  if (verify.status !== 200 || verify.body.data.verified !== true) throw new Error(`verifying ${domain} failed: ${JSON.stringify(verify.body)}`);
  return { secretKey: project.body.data.secretKey as string, domain };
}

interface Acceptance {
  /** Monotonic µs: first request sent, first 2xx received, last response received. */
  startUs: number;
  firstOkUs: number;
  lastUs: number;
  ok: number;
  non2xx: number;
  statuses: Record<string, number>;
  errors: number;
  timeouts: number;
  latencies: Float64Array;
  /** Recipients the platform accepted (from the response bodies) and when (monotonic µs). */
  accepted: Map<string, number>;
  /** CPU snapshot at the start and the window up to the last response. */
  before: CpuSnapshot;
  cpu: CpuWindow;
}

/** `count` requests of POST /v1/send, one recipient each (`key`-n), on `connections` connections. */
async function drive(platform: Platform, sink: Sink, secretKey: string, domain: string, key: string, count: number): Promise<Acceptance> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const accepted = new Map<string, number>();
  let ok = 0;
  let non2xx = 0;
  let firstOkUs = 0;
  let lastUs = 0;
  let n = 0;
  const from = { name: SENDER_NAME, email: `hello@${domain}` };
  const before = cpuSnapshot(platform.proc.pid, sink.proc.pid);
  const startUs = monotonicUs();
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${platform.url}/v1/send`,
        method: 'POST',
        connections: Math.min(options.connections, count),
        pipelining: 1,
        amount: count,
        timeout: 60,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secretKey}` },
        requests: [
          {
            setupRequest: (request) => {
              const i = n++;
              return { ...request, body: JSON.stringify({ to: recipientOf(key, i), from, subject: SUBJECT, body: BODY, data: dataOf(i) }) };
            },
            onResponse: (status, body) => {
              if (status < 200 || status >= 300) return;
              const email = (JSON.parse(body) as { data?: { emails?: { contact: { email: string }; status: string }[] } }).data?.emails?.[0];
              if (email?.status === 'QUEUED') accepted.set(email.contact.email, monotonicUs());
            },
          },
        ],
      },
      (err, res) => (err ? reject(err) : resolve(res)),
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      lastUs = monotonicUs();
      statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
      if (statusCode >= 200 && statusCode < 300) {
        ok++;
        firstOkUs ||= lastUs;
        latencies.push(responseTime);
      } else {
        non2xx++;
      }
    });
    const died = () => {
      instance.stop();
      reject(new Error(`the platform exited during the load:\n${platform.proc.logTail()}`));
    };
    platform.proc.child.once('exit', died);
    instance.once('done', () => platform.proc.child.off('exit', died));
  });
  const cpu = cpuWindow(before, cpuSnapshot(platform.proc.pid, sink.proc.pid));
  return {
    startUs,
    firstOkUs,
    lastUs: lastUs || monotonicUs(),
    ok,
    non2xx,
    statuses,
    errors: result.errors,
    timeouts: result.timeouts,
    latencies: Float64Array.from(latencies).sort(),
    accepted,
    before,
    cpu,
  };
}

/** Waits until the platform's CPU use drops to (almost) nothing: background work of the warm-up done. */
async function quiesce(pid: number, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = processCpuSeconds(pid);
  while (Date.now() < deadline) {
    await sleep(500);
    const now = processCpuSeconds(pid);
    if (now - last < 0.03) return; // < 6% of a core over half a second
    last = now;
  }
}

interface PlatformOutcome {
  phase: SinkPhase;
  acceptance: Acceptance;
  /** Emails counted by the sink when the last response arrived. */
  atSinkWhenAccepted: number;
  /** Per email: sink arrival − acceptance, seconds, sorted. */
  delays: Float64Array;
  startMiB: number;
  peakMiB: number;
  sampleChecks: string[];
  logLines: number;
  logTail: string;
  loadBefore: string;
}

async function runPlatform(sink: Sink, dnsServer: DnsServer, profileRoot: string | undefined): Promise<PlatformOutcome> {
  const loadBefore = loadAverage();
  console.error(`[platform] starting apps/api/main.ts (load average ${loadBefore})`);
  const profileDir = profileRoot && join(profileRoot, 'platform');
  const platform = await startPlatform(sink, dnsServer, profileDir);
  try {
    const { secretKey, domain } = await setUp(platform, sink, dnsServer);
    const startMiB = memoryOf(platform.proc.pid).rssMiB;
    if (options.warmup > 0) {
      console.error(`[platform] warm-up: ${options.warmup} emails`);
      const warm = await drive(platform, sink, secretKey, domain, 'pw', options.warmup);
      const warmed = await sink.waitFor('pw', warm.accepted.size, 30_000);
      if (warmed.count !== warm.accepted.size) throw new Error(`warm-up: ${warm.accepted.size} accepted, ${warmed.count} reached the sink`);
      await quiesce(platform.proc.pid, 20_000);
    }
    console.error(`[platform] measuring: ${options.emails} × POST /v1/send, ${Math.min(options.connections, options.emails)} connections`);
    const acceptance = await drive(platform, sink, secretKey, domain, 'pm', options.emails);
    const atAccepted = await sink.stats('pm');
    let reached: CpuSnapshot | undefined;
    await sink.waitFor('pm', acceptance.accepted.size, 60_000, () => {
      reached = cpuSnapshot(platform.proc.pid, sink.proc.pid);
    });
    await sleep(1_000); // a late duplicate would show here
    const stats = await sink.stats('pm', true);
    const { peakMiB } = memoryOf(platform.proc.pid);

    // The platform's CPU over the whole window: acceptance start to the Nth email at the sink.
    const cpu = cpuWindow(acceptance.before, reached!);
    const endUs = stats.lastUs ?? monotonicUs();
    const seconds = (endUs - acceptance.firstOkUs) / 1e6;

    // Exactly the accepted recipients, each once.
    const received = new Set(stats.recipients ?? []);
    const missing = [...acceptance.accepted.keys()].filter((r) => !received.has(r));
    const unexpected = [...received].filter((r) => !acceptance.accepted.has(r));
    const ok =
      stats.count === acceptance.accepted.size &&
      stats.duplicates === 0 &&
      missing.length === 0 &&
      unexpected.length === 0 &&
      stats.signed === stats.count &&
      acceptance.accepted.size === options.emails;
    const text =
      `platform: ${options.emails} requests, ${acceptance.ok} × 2xx, ${acceptance.accepted.size} emails accepted (QUEUED); the sink counted ${stats.count} ` +
      `(${stats.distinct} distinct recipients, ${stats.duplicates} duplicates, ${missing.length} accepted but not received, ${unexpected.length} received but not accepted), ` +
      `${stats.signed} DKIM-signed, ${(stats.bytes / Math.max(1, stats.count)).toFixed(0)} bytes each on average: ` +
      (ok ? 'OK' : 'MISMATCH: the benchmark is wrong (email lost, repeated or unsigned)');

    // Per-email delay from acceptance to the sink.
    const arrivals = new Map<string, number>();
    (stats.recipients ?? []).forEach((r, i) => arrivals.set(r, stats.times![i]));
    const delays = Float64Array.from(
      [...acceptance.accepted].filter(([r]) => arrivals.has(r)).map(([r, at]) => (arrivals.get(r)! - at) / 1e6),
    ).sort();

    const sampleChecks = await checkSample(stats.sample, domain, dnsServer, platform.url);
    return {
      phase: {
        name: 'platform mailer: first acceptance → Nth email at the sink',
        emails: stats.count,
        seconds,
        cpu,
        stats,
        check: { ok: ok && sampleChecks.every((c) => c.startsWith('OK')), text },
        loadBefore,
        window: { startUs: acceptance.startUs, endUs },
        profileDir,
      },
      acceptance,
      atSinkWhenAccepted: atAccepted.count,
      delays,
      startMiB,
      peakMiB,
      sampleChecks,
      logLines: platform.proc.logLines(),
      logTail: platform.proc.logTail(),
      loadBefore,
    };
  } catch (err) {
    console.error(`[platform] failed; last output:\n${platform.proc.logTail()}`);
    throw err;
  } finally {
    await stopChild(platform.proc.child);
  }
}

/** One accepted email as the sink got it: DKIM passes against the published key; CSS inlined; tracked. */
async function checkSample(sampleB64: string | null, domain: string, dnsServer: DnsServer, publicUrl: string): Promise<string[]> {
  if (!sampleB64) return ['FAILED: no sample message'];
  const raw = Buffer.from(sampleB64, 'base64');
  const parsed = await PostalMime.parse(raw);
  const html = parsed.html ?? '';
  const resolver = new Resolver();
  resolver.setServers([dnsServer.address]);
  const auth = await authenticate(raw, {
    resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT'),
    sender: `hello@${domain}`,
    ip: '127.0.0.1',
    helo: 'localhost',
    mta: 'sink.bench',
  });
  const dkim = auth.dkim.results[0];
  const mark = (ok: boolean, what: string) => `${ok ? 'OK' : 'FAILED'}: ${what}`;
  return [
    mark(dkim?.signingDomain === domain && dkim?.status.result === 'pass', `DKIM of the first email: ${dkim?.status.result ?? 'no signature'} (d=${dkim?.signingDomain ?? '-'})`),
    mark(/<h1 style="[^"]*font-size/.test(html), 'CSS inlined by juice (<h1 style="…font-size…">)'),
    mark(html.includes(`${publicUrl}/t/open/`), 'open pixel present'),
    mark((html.match(new RegExp(`${publicUrl}/t/click/`, 'g')) ?? []).length === 3, 'all three links rewritten to click URLs'),
    mark(/Customer \d+/i.test(parsed.text ?? '') && /A-1\d{5}/.test(parsed.subject ?? ''), 'template data rendered (subject, text part)'),
  ];
}

// ---- profiles -----------------------------------------------------------------------------------

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * The top functions and modules of a .cpuprofile over a window (monotonic µs, the clock V8 stamps
 * samples with): self time by module and function, inclusive time by module (a sample counts once
 * for every module on its stack) and inclusive time of the repo's functions. Async hops (streams,
 * promises, setImmediate) cut stacks, so inclusive times are lower bounds.
 */
function summarizeProfile(file: string, window: { startUs: number; endUs: number }, emails: number): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const hits = new Map<number, number>();
  let at = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < window.startUs || at > window.endUs) continue;
    hits.set(profile.samples[i], (hits.get(profile.samples[i]) ?? 0) + 1);
    total++;
  }
  if (total === 0) return '(no samples in the measured window)';
  const label = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const where = shortUrl(url);
    // tsx hands V8 transformed code, so the line numbers of the repo's .ts files are not theirs.
    const line = /\.[cm]?ts$/.test(where) ? '' : `:${lineNumber + 1}`;
    return `${functionName || '(anonymous)'} ${where ? `${where}${line}` : ''}`.trim();
  };
  const add = (map: Map<string, number>, key: string, n: number) => map.set(key, (map.get(key) ?? 0) + n);
  const selfByFunction = new Map<string, number>();
  const selfByModule = new Map<string, number>();
  const inclusiveByModule = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, n] of hits) {
    const node = byId.get(id)!;
    add(selfByFunction, label(node), n);
    add(selfByModule, moduleOf(node.callFrame.url, node.callFrame.functionName), n);
    const seenModules = new Set<string>();
    const seenFunctions = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)!;
      const { url, functionName } = frame.callFrame;
      if (functionName === '(root)') continue;
      const module = moduleOf(url, functionName);
      if (!seenModules.has(module)) {
        seenModules.add(module);
        add(inclusiveByModule, module, n);
      }
      if (!url.startsWith('file://') || url.includes('/node_modules/')) continue;
      const key = label(frame);
      if (!seenFunctions.has(key)) {
        seenFunctions.add(key);
        add(inclusive, key, n);
      }
    }
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([key, count]) => `  ${((100 * count) / total).toFixed(1).padStart(5)}%  ${key}`)
      .join('\n');
  /** A write syscall on a socket (not the journal's fs write): the kernel's TCP work, mostly. */
  const isSocketWrite = (id: number) => {
    if (!/^(writeBuffer|writev|writeUtf8String|writeLatin1String|writeAsciiString)$/.test(byId.get(id)!.callFrame.functionName)) return false;
    let cur = parent.get(id);
    for (let depth = 0; cur !== undefined && depth < 6; depth++, cur = parent.get(cur)) {
      const url = byId.get(cur)!.callFrame.url;
      if (url === 'node:net' || url === 'node:internal/stream_base_commons') return true;
      if (url === 'node:fs') return false;
    }
    return false;
  };
  // Buckets: each sample goes to the innermost frame that names one (see BUCKETS); store samples
  // are also split by the first bucket above the store on their stack (who asked for the write).
  const buckets = new Map<string, number>();
  const storeCallers = new Map<string, number>();
  for (const [id, n] of hits) {
    let bucket: string | undefined;
    let caller: string | undefined;
    if (isSocketWrite(id)) bucket = SOCKET_WRITES;
    for (let cur: number | undefined = bucket ? undefined : id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)!.callFrame;
      const b = bucketOf(frame.url, frame.functionName);
      if (!b) continue;
      if (!bucket) {
        bucket = b;
        if (b !== STORE) break;
      } else if (b !== STORE) {
        caller = b;
        break;
      }
    }
    add(buckets, bucket ?? 'other (node internals, native, unattributed async callbacks)', n);
    if (bucket === STORE) add(storeCallers, caller ?? '(async: no caller on the stack)', n);
  }
  const meanDeltaMs = profile.timeDeltas.reduce((a, b) => a + b, 0) / Math.max(1, profile.timeDeltas.length) / 1000;
  const perEmail = (count: number) => (emails ? ` ${((count * meanDeltaMs) / emails).toFixed(3).padStart(6)} ms/email` : '');
  const bucketLines = (map: Map<string, number>, indent: string) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([key, count]) => `${indent}${((100 * count) / total).toFixed(1).padStart(5)}%${perEmail(count)}  ${key}`)
      .join('\n');
  return [
    `${total} samples in the measured window (idle samples included: "(idle)", "(program)"), ${meanDeltaMs.toFixed(2)} ms apart on average`,
    `where the time went (each sample to the innermost frame naming a bucket; ms/email = samples × interval ÷ ${emails} emails, under the profiler):\n${bucketLines(buckets, '  ')}`,
    `  the store's share above, by the bucket that called it:\n${bucketLines(storeCallers, '      ')}`,
    `self time by module:\n${top(selfByModule, 18)}`,
    `inclusive time by module (once per sample per module on the stack):\n${top(inclusiveByModule, 25)}`,
    `self time by function:\n${top(selfByFunction, 30)}`,
    `inclusive time of the repo's functions:\n${top(inclusive, 30)}`,
  ].join('\n');
}

const STORE = 'store (embedded store, journal, mingo)';
const SOCKET_WRITES = 'socket writes (write/writev syscalls: the kernel TCP work of both ends, mostly)';

/** Buckets of --cpu-prof summaries; for a frame, the first whose pattern matches its URL. */
const BUCKETS: [string, RegExp][] = [
  ['compose: juice (CSS inlining)', /node_modules\/juice\//],
  ['compose: html-to-text (text part)', /node_modules\/html-to-text\//],
  ['compose: template, links, tracking', /\/(apps\/mailer\/compose|domain\/mail\/links|domain\/templates\/render)\.ts$/],
  ['nodemailer: DKIM (body hash, sign)', /node_modules\/nodemailer\/dist\/\w+\/dkim\//],
  ['nodemailer: building the MIME message', /node_modules\/nodemailer\/dist\/\w+\/(mime-node|mail-composer|mailer|stream-transport|mime-funcs|qp|base64|addressparser|shared|punycode)\//],
  ['nodemailer: SMTP client (pool, connection, data stream)', /node_modules\/nodemailer\/dist\/\w+\/(smtp-pool|smtp-connection|smtp-transport)\//],
  ['mailer: transport.ts (compile, terminator hold)', /\/apps\/mailer\/transport\.ts$/],
  ['mailer: deliver (claims, checks, breaker)', /(\/apps\/mailer\/(mailer|message)\.ts$|node_modules\/opossum\/)/],
  ['pub/sub (embedded queue)', /\/adapters\/embedded\/(pubsub|timer-queue)\.ts$/],
  ['results: contact actor, email events', /(\/actors\/|\/adapters\/embedded\/actor-host\.ts$|\/domain\/(mail\/results|events\/))/],
  ['acceptance: HTTP, auth, validation, send service, contacts', /(\/apps\/api\/|\/domain\/(send|contacts|accounts|idempotency|domains)|node_modules\/(express|router|body-parser|raw-body|zod|finalhandler|send|serve-static|iconv-lite|qs|type-is|content-type)\/)/],
  [STORE, /(\/adapters\/embedded\/(store|store-index|journal)\.ts$|node_modules\/mingo\/)/],
  ['smtp-server (the sink)', /node_modules\/smtp-server\//],
];

function bucketOf(url: string, functionName: string): string | undefined {
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(idle)' || functionName === '(program)') return 'idle, (program)';
  if (!url) return undefined;
  for (const [bucket, pattern] of BUCKETS) if (pattern.test(url)) return bucket;
  return undefined;
}


/** npm packages by name (nodemailer by its internal module), repo files by top two path parts. */
function moduleOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node: internals';
  const path = shortUrl(url);
  const nodemailer = /node_modules\/nodemailer\/dist\/\w+\/([^/]+)/.exec(path);
  if (nodemailer) return `npm: nodemailer/${nodemailer[1]}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return `npm: ${pkg[1]}`;
  return path.split('/').slice(0, 2).join('/');
}

function printProfiles(phases: SinkPhase[]): void {
  for (const phase of phases) {
    if (!phase.profileDir) continue;
    const files = existsSync(phase.profileDir) ? readdirSync(phase.profileDir).filter((f) => f.endsWith('.cpuprofile')) : [];
    for (const file of files) {
      console.log(`\nCPU profile of ${phase.name}: ${join(phase.profileDir, file)}\n${summarizeProfile(join(phase.profileDir, file), phase.window, phase.emails)}`);
    }
    if (!files.length) console.log(`\nno CPU profile was written for ${phase.name}`);
  }
}

// ---- report -------------------------------------------------------------------------------------


const fmt = (n: number, decimals: number) => (Number.isFinite(n) ? n.toFixed(decimals) : 'n/a');

function throughputTable(yardsticks: Map<Variant, SinkPhase>, platform: SinkPhase | undefined): string {
  const rate = (p: SinkPhase) => p.emails / p.seconds;
  const b = yardsticks.get('nodelay');
  const d = yardsticks.get('dkim-nodelay');
  const lines = [
    '| sender → loopback sink | emails/s | × (b) | × (d) | sender CPU per email (ms) | sender CPU (cores) | sink CPU per email (ms) | other processes CPU (cores) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const row = (name: string, p: SinkPhase) => {
    const r = rate(p);
    lines.push(
      `| ${name} | ${fmt(r, 0)} | ${b ? `${fmt(r / rate(b), 2)}×` : ''} | ${d ? `${fmt(r / rate(d), 2)}×` : ''} | ` +
        `${fmt((1000 * p.cpu.sender) / p.emails, 3)} | ${fmt(p.cpu.sender / p.seconds, 2)} | ${fmt((1000 * p.cpu.sink) / p.emails, 3)} | ${fmt(p.cpu.others / p.seconds, 2)} |`,
    );
  };
  for (const [, p] of yardsticks) row(p.name, p);
  if (platform) row('**platform** (embedded): first acceptance → Nth email at the sink', platform);
  return lines.join('\n');
}

function platformTable(o: PlatformOutcome): string {
  const a = o.acceptance;
  const n = o.phase.emails;
  const acceptSeconds = (a.lastUs - a.startUs) / 1e6;
  const whileAccepting = o.atSinkWhenAccepted / ((a.lastUs - a.firstOkUs) / 1e6);
  const drainSeconds = ((o.phase.stats.lastUs ?? a.lastUs) - a.lastUs) / 1e6;
  const rows: [string, string][] = [
    ['POST /v1/send requests/s (2xx), first request → last response', fmt(a.ok / acceptSeconds, 0)],
    ['acceptance latency p50 / p90 / p99 / max (ms)', [0.5, 0.9, 0.99, 1].map((q) => fmt(percentile(a.latencies, q), q === 1 ? 1 : 2)).join(' / ')],
    ['2xx / non-2xx / errors (timeouts)', `${a.ok} / ${a.non2xx} / ${a.errors} (${a.timeouts})`],
    ['platform CPU while accepting (cores)', fmt(a.cpu.sender / a.cpu.wall, 2)],
    ['load generator CPU while accepting (cores)', fmt(a.cpu.self / a.cpu.wall, 2)],
    ['emails at the sink when the last response arrived', `${o.atSinkWhenAccepted} of ${n}`],
    ['mailer emails/s while accepting', fmt(whileAccepting, 0)],
    ['mailer emails/s after acceptance ended (the backlog)', drainSeconds > 0 ? fmt((n - o.atSinkWhenAccepted) / drainSeconds, 0) : 'n/a'],
    ['**mailer emails/s, first acceptance → Nth email at the sink**', `**${fmt(n / o.phase.seconds, 0)}**`],
    ['acceptance → sink, per email, p50 / p99 / max (s)', [0.5, 0.99, 1].map((q) => fmt(percentile(o.delays, q), 2)).join(' / ')],
    ['platform CPU per email, whole window (ms; acceptance + mailer + results)', fmt((1000 * o.phase.cpu.sender) / n, 3)],
    ['platform CPU, whole window (cores)', fmt(o.phase.cpu.sender / o.phase.cpu.wall, 2)],
    ['other processes CPU, whole window (cores)', fmt(o.phase.cpu.others / o.phase.cpu.wall, 2)],
    ['RSS before load / peak RSS, VmHWM (MiB)', `${fmt(o.startMiB, 0)} / ${fmt(o.peakMiB, 0)}`],
  ];
  return ['| platform (embedded) | value |', '| --- | ---: |', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
}



// ---- main ---------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const facts = machineFacts();
  const argv = process.argv.slice(2).map(shellQuote).join(' ');
  const commandLine =
    process.env.npm_lifecycle_event === 'bench:send' ? `npm run bench:send${argv ? ` -- ${argv}` : ''}` : `node --import tsx bench/send.ts${argv ? ` ${argv}` : ''}`;
  const startedAt = new Date();
  const profileRoot = options.cpuProf ? await mkdtemp(join(tmpdir(), 'mailroom-bench-profiles-')) : undefined;

  const sink = await Sink.start();
  console.error(`[sink] listening on ${sink.url} (pid ${sink.proc.pid})`);

  const yardsticks = new Map<Variant, SinkPhase>();
  if (options.yardsticks.length) {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    for (const variant of options.yardsticks) yardsticks.set(variant, await runYardstick(variant, sink, privateKey, profileRoot));
  }
  let platform: PlatformOutcome | undefined;
  if (options.platform) {
    const dns = await startDnsServer();
    onCleanup(() => dns.close());
    platform = await runPlatform(sink, dns, profileRoot);
  }

  const checks = [...[...yardsticks.values()].map((p) => p.check), ...(platform ? [platform.phase.check] : [])];
  const throughput = throughputTable(yardsticks, platform?.phase);
  const details: string[] = [
    ...checks.map((c) => c.text),
    ...(platform
      ? [
          `platform sample (the first measured email as received): ${platform.sampleChecks.join('; ')}`,
          `platform: statuses ${Object.entries(platform.acceptance.statuses).map(([code, n]) => `${code}×${n}`).join(', ') || 'none'}; ` +
            `printed ${platform.logLines} log lines at warn and above; load average before start ${platform.loadBefore}`,
        ]
      : []),
    `load average before each yardstick: ${[...yardsticks].map(([v, p]) => `${v} ${p.loadBefore}`).join('; ') || 'n/a'}`,
  ];
  const markdown = [throughput, ...(platform ? ['', platformTable(platform)] : [])].join('\n');
  console.log(`\n${markdown}\n`);
  for (const line of details) console.log(`- ${line}`);
  if (platform && platform.logLines) console.log(`\nlast lines the platform printed:\n${platform.logTail}`);

  if (profileRoot) {
    printProfiles([...yardsticks.values(), ...(platform ? [platform.phase] : [])]);
    console.log(`\n(profiled runs are not recorded: the profiler slows the processes down; profiles kept in ${profileRoot})`);
  }

  if (options.record) {
    const section = [
      `## ${startedAt.toISOString().replace(/\.\d+Z$/, 'Z')}`,
      '',
      `- command: \`${commandLine}\``,
      `- config: ${options.emails} measured emails per phase after ${options.warmup} warm-up ones; yardsticks: ${POOL_SIZE} pooled connections, ` +
        `${options.inFlight} emails in flight; platform: ${Math.min(options.connections, options.emails)} connections, 1 request in flight each, ` +
        `1 recipient per request, EMAIL_RATE_PER_SECOND=${options.emailRate}, API_RATE_PER_MINUTE=0`,
      `- machine: ${facts.nproc} cores (nproc), ${facts.model}, ${facts.memGiB.toFixed(0)} GiB, node ${facts.node}; commit ${facts.commit}`,
      ...(options.note ? [`- note: ${options.note}`] : []),
      '',
      markdown,
      '',
      ...details.map((line) => `- ${line}`),
      '',
    ].join('\n');
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    if (!existsSync(RESULTS_FILE)) {
      appendFileSync(
        RESULTS_FILE,
        '# Sending benchmark results\n\nAppended by `npm run bench:send` (bench/send.ts); newest last. ' +
          'See bench/README.md for how to read them. Compare medians over several runs, never one run.\n\n',
      );
    }
    appendFileSync(RESULTS_FILE, `${section}\n`);
    console.log(`\nappended to ${relative(ROOT, RESULTS_FILE)}`);
  }
  return checks.every((c) => c.ok) ? 0 : 1;
}

let exitCode = 1;
try {
  exitCode = await main();
} catch (err) {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
} finally {
  await cleanup();
}
process.exit(exitCode);
