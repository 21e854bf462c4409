/**
 * What the mail benchmarks (bench/send.ts, bench/campaign.ts) share: messages from their child
 * processes (the sink, yardsticks, the platform; started by common.ts), the sink's counts, CPU
 * windows, starting and setting up the embedded platform over its public API (a verified user, a
 * project, a verified sending domain), and the summary of --cpu-prof profiles by bucket.
 */
import { Resolver } from 'node:dns/promises';
import { authenticate } from 'mailauth';
import PostalMime from 'postal-mime';
import { ApiClient } from '../test/harness/client.ts';
import type { DnsServer } from '../test/harness/dns-server.ts';
import { publishRecords, type DomainRecord } from '../test/harness/domains.ts';
import { freePort, machineBusySeconds, monotonicUs, processCpuSeconds, sleep, startChild, startNodeOptions, tempDir, usageOf, type Child } from './common.ts';
import { NO_SAMPLES, addTo, printProfileDir, readProfileWindow } from './profile.ts';
import { PROJECT_NAME, recipientOf, type SinkStats } from './send-shared.ts';

/** A child's first IPC message of `type`; rejects if it exits first. */
export function messageOf<T>(c: Child, type: string, timeoutMs: number): Promise<T> {
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

export class Sink {
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

  /** `replyDelayMs`: the sink answers that much later, a relay at that round trip (send-sink.ts). */
  static async start(replyDelayMs = 0): Promise<Sink> {
    const proc = startChild('sink', 'bench/send-sink.ts', { ...process.env, SINK_REPLY_DELAY_MS: String(replyDelayMs) });
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


export interface CpuSnapshot {
  sender: number;
  sink: number;
  self: number;
  machineBusy: number;
  atUs: number;
}

/** `sender`: its pid, or what reads its CPU seconds (a platform's `cpu`, plus its database's). */
export const cpuSnapshot = (sender: number | (() => number), sinkPid: number): CpuSnapshot => ({
  sender: typeof sender === 'number' ? processCpuSeconds(sender) : sender(),
  sink: processCpuSeconds(sinkPid),
  self: processCpuSeconds('self'),
  machineBusy: machineBusySeconds(),
  atUs: monotonicUs(),
});

export interface CpuWindow {
  /** CPU seconds in the window. */
  sender: number;
  sink: number;
  self: number;
  /** The rest of the machine's busy CPU seconds (other processes: the noise). */
  others: number;
  wall: number;
}

export function cpuWindow(a: CpuSnapshot, b: CpuSnapshot, senderSeconds?: number): CpuWindow {
  const sender = senderSeconds ?? b.sender - a.sender;
  const sink = b.sink - a.sink;
  const self = b.self - a.self;
  const busy = b.machineBusy - a.machineBusy;
  return { sender, sink, self, others: Math.max(0, busy - sender - sink - self), wall: (b.atUs - a.atUs) / 1e6 };
}




export interface SinkPhase {
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


export interface Platform {
  proc: Child;
  url: string;
  api: ApiClient;
  dataDir: string;
  /** CPU seconds and memory: of the process, or summed over the whole stack in distributed mode. */
  cpu(): number;
  memory(): { peakMiB: number; rssMiB: number };
}

export async function startPlatform(
  sink: Sink,
  dnsServer: DnsServer,
  profileDir: string | undefined,
  settings: Record<string, string>,
  dataDir?: string,
  root?: string,
  /** Distributed mode (`npm run start:distributed`) on this MongoDB-wire server; embedded without. */
  mongodbUrl?: string,
): Promise<Platform> {
  dataDir ??= await tempDir('mailroom-bench-send-');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    PUBLIC_URL: url,
    DATA_DIR: dataDir,
    SMTP_URL: sink.url,
    DNS_SERVERS: dnsServer.address,
    API_RATE_PER_MINUTE: '0',
    LOG_LEVEL: 'warn',
    // No inbound SMTP listener: the benchmarks need none, and port 2525 may be another instance's.
    INBOUND_SMTP_PORT: '0',
    ...settings,
  };
  // Embedded mode, whatever the calling shell has set.
  for (const key of ['MAILROOM_MODE', 'REDIS_URL', 'MONGODB_URL', 'LINK_SECRET', 'SYSTEM_FROM']) delete env[key];
  // Embedded: the V8 options that tree's `npm start` gives the platform (its heap limit).
  const startOptions = mongodbUrl ? '' : startNodeOptions(root);
  if (startOptions) env.NODE_OPTIONS = [startOptions, env.NODE_OPTIONS].filter(Boolean).join(' ');
  if (mongodbUrl) env.MONGODB_URL = mongodbUrl;
  // `root`: another commit's tree (common.ts worktreeOf) whose platform runs instead of this one's.
  const proc = startChild('platform', mongodbUrl ? 'scripts/start-distributed.ts' : 'apps/api/main.ts', env, profileDir, { root });
  const deadline = Date.now() + 90_000;
  for (;;) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
      throw new Error(`the platform exited (${proc.child.exitCode ?? proc.child.signalCode}) before answering /health:\n${proc.logTail()}`);
    }
    try {
      // Distributed: the API answers before the last mailer is up; the stack says when all are.
      if ((await fetch(`${url}/health`)).ok && (!mongodbUrl || proc.logTail().includes('mailroom (distributed) is ready'))) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`the platform did not answer /health within 90 s:\n${proc.logTail()}`);
    await sleep(100);
  }
  return {
    proc,
    url,
    api: new ApiClient(url),
    dataDir,
    ...usageOf(proc.pid, mongodbUrl !== undefined),
  };
}

/**
 * A verified user (through the verification email the sink receives), a project, and a sending
 * domain verified through the DNS server, all over the public API. Returns the secret key, the
 * sending domain, and the user's credentials (to sign a browser in).
 */
export async function setUp(
  platform: Platform,
  sink: Sink,
  dnsServer: DnsServer,
  ownerKey = 'owner',
  dkimSigning: 'platform' | 'relay' = 'platform',
): Promise<{ secretKey: string; domain: string; projectId: string; user: { email: string; password: string } }> {
  const { api } = platform;
  const email = recipientOf(ownerKey, 1);
  const password = 'bench password 1234';
  const signup = await api.post('/auth/signup', { email, password });
  if (signup.status !== 201) throw new Error(`signup failed (${signup.status}): ${JSON.stringify(signup.body)}`);
  const mail = await sink.waitFor(ownerKey, 1, 30_000);
  if (!mail.sample) throw new Error(`no verification email reached the sink:\n${platform.proc.logTail()}`);
  const parsed = await PostalMime.parse(Buffer.from(mail.sample, 'base64'));
  const link = /https?:\/\/\S+\/auth\/verify\?token=[\w%-]+/.exec(parsed.text ?? '')?.[0];
  if (!link) throw new Error('no verification link in the verification email');
  const verified = await api.get(link.slice(link.indexOf('/auth/')));
  if (verified.status !== 200) throw new Error(`email verification failed (${verified.status}): ${JSON.stringify(verified.body)}`);
  const login = await api.post('/auth/login', { email, password });
  if (login.status !== 200) throw new Error(`login failed (${login.status}): ${JSON.stringify(login.body)}`);
  const as = { auth: login.body.data.token as string };
  const project = await api.post('/projects', { name: PROJECT_NAME }, as);
  if (project.status !== 201) throw new Error(`project creation failed (${project.status}): ${JSON.stringify(project.body)}`);
  const domain = `bench-${Date.now().toString(36)}.example`;
  const added = await api.post('/domains', { projectId: project.body.data.id, domain }, as);
  if (added.status !== 201) throw new Error(`adding ${domain} failed (${added.status}): ${JSON.stringify(added.body)}`);
  publishRecords(dnsServer, added.body.data.records as DomainRecord[]);
  const verify = await api.get(`/domains/${added.body.data.id}/verify`, as);
  if (verify.status !== 200 || verify.body.data.verified !== true) throw new Error(`verifying ${domain} failed: ${JSON.stringify(verify.body)}`);
  if (dkimSigning === 'relay') {
    const patched = await api.patch(`/domains/${added.body.data.id}`, { dkimSigning }, as);
    if (patched.status !== 200) throw new Error(`leaving DKIM to the relay failed (${patched.status}): ${JSON.stringify(patched.body)}`);
  }
  return { secretKey: project.body.data.secretKey as string, domain, projectId: project.body.data.id as string, user: { email, password } };
}


export async function quiesce(pid: number, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = processCpuSeconds(pid);
  while (Date.now() < deadline) {
    await sleep(500);
    const now = processCpuSeconds(pid);
    if (now - last < 0.03) return; // < 6% of a core over half a second
    last = now;
  }
}


/**
 * The top functions and modules of a .cpuprofile over a window (monotonic µs, the clock V8 stamps
 * samples with), as bench/profile.ts tallies them, and where the time went by bucket (BUCKETS)
 * with its cost per email.
 */
export function summarizeProfile(file: string, window: { startUs: number; endUs: number }, emails: number): string {
  const sampled = readProfileWindow(file, window);
  if (!sampled) return NO_SAMPLES;
  const { profile, byId, parent, hits, total, top } = sampled;
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
    addTo(buckets, bucket ?? 'other (node internals, native, unattributed async callbacks)', n);
    if (bucket === STORE) addTo(storeCallers, caller ?? '(async: no caller on the stack)', n);
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
    `self time by module:\n${top(sampled.selfByModule, 18)}`,
    `inclusive time by module (once per sample per module on the stack):\n${top(sampled.inclusiveByModule, 25)}`,
    `self time by function:\n${top(sampled.selfByFunction, 30)}`,
    `inclusive time of the repo's functions:\n${top(sampled.inclusive, 30)}`,
  ].join('\n');
}

export const STORE = 'store (SQLite store, its read cache, mingo)';
export const SOCKET_WRITES = 'socket writes (write/writev syscalls: the kernel TCP work of both ends, mostly)';

/**
 * Buckets of --cpu-prof summaries; for a frame, the first whose pattern matches its URL. A file no
 * bucket names counts towards the innermost bucket above it on the stack (domain/ids.ts under the
 * mailer is the mailer's), so only a sample with no bucket anywhere on its stack is "other".
 */
export const BUCKETS: [string, RegExp][] = [
  ['compose: juice (CSS inlining)', /node_modules\/juice\//],
  ['compose: html-to-text (text part)', /node_modules\/html-to-text\//],
  ['compose: template, links, tracking', /\/(apps\/mailer\/compose|domain\/mail\/links|domain\/templates\/render)\.ts$/],
  ['sending thread: MIME, DKIM, our SMTP client', /\/apps\/mailer\/(render|message|send-thread|mime|quoted-printable|dkim|smtp-pipelined|smtp-answers|transport)\.ts$/],
  ['nodemailer: DKIM (body hash, sign)', /node_modules\/nodemailer\/dist\/\w+\/dkim\//],
  ['nodemailer: building the MIME message', /node_modules\/nodemailer\/dist\/\w+\/(mime-node|mail-composer|mailer|stream-transport|mime-funcs|qp|base64|addressparser|shared|punycode)\//],
  ['nodemailer: SMTP client (pool, connection, data stream)', /node_modules\/nodemailer\/dist\/\w+\/(smtp-pool|smtp-connection|smtp-transport)\//],
  [
    'mailer: deliver (claims, checks, breaker, send slots, the hand-over to the sending threads)',
    /(\/apps\/mailer\/(mailer|send-pool|commit-log|connections|retries)\.ts$|\/domain\/mail\/(gate|claims)\.ts$|\/domain\/suppressions\/|\/adapters\/(flexible-rate-limiter|embedded\/rate-limiter)\.ts$|node_modules\/(opossum|rate-limiter-flexible)\/)/,
  ],
  ['pub/sub (embedded queue)', /\/adapters\/embedded\/(pubsub|timer-queue)\.ts$/],
  ['campaign batches (audience pages, emails queued)', /(\/actors\/campaign\/|\/domain\/campaigns\/|\/domain\/mail\/outbound\.ts$)/],
  ['results: contact actor, email events', /(\/actors\/|\/apps\/mailer\/delivery-records\.ts$|\/adapters\/embedded\/actor-host\.ts$|\/domain\/(mail\/results|events\/))/],
  ['acceptance: HTTP, auth, validation, send service, contacts', /(\/apps\/api\/|\/domain\/(send|contacts\/(?!collection\.ts)|accounts|idempotency|domains)|node_modules\/(express|router|body-parser|raw-body|zod|finalhandler|send|serve-static|iconv-lite|qs|type-is|content-type)\/)/],
  [STORE, /(\/adapters\/sqlite\/|\/adapters\/embedded\/store-match\.ts$|\/adapters\/read-cache\.ts$|node_modules\/mingo\/)/],
  ['smtp-server (the sink)', /node_modules\/smtp-server\//],
];

export function bucketOf(url: string, functionName: string): string | undefined {
  if (functionName === '(garbage collector)') return 'garbage collector';
  if (functionName === '(idle)' || functionName === '(program)') return 'idle, (program)';
  if (!url) return undefined;
  for (const [bucket, pattern] of BUCKETS) if (pattern.test(url)) return bucket;
  return undefined;
}


export function printProfiles(phases: SinkPhase[]): void {
  for (const phase of phases) {
    if (phase.profileDir) printProfileDir(phase.profileDir, phase.name, (file) => summarizeProfile(file, phase.window, phase.emails));
  }
}

/** One accepted email as the sink got it: DKIM passes against the published key; CSS inlined; tracked. */
export async function checkSample(sampleB64: string | null, domain: string, dnsServer: DnsServer, publicUrl: string): Promise<string[]> {
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
