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
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { startDnsServer, type DnsServer } from '../test/harness/dns-server.ts';
import { Sink, checkSample, cpuSnapshot, cpuWindow, messageOf, printProfiles, quiesce, setUp, startPlatform, type CpuSnapshot, type CpuWindow, type Platform, type SinkPhase } from './mail-harness.ts';
import {
  BODY,
  SENDER_NAME,
  SUBJECT,
  VARIANTS,
  dataOf,
  meanBytes,
  recipientOf,
  type Variant,
  type YardstickConfig,
  type YardstickResult,
} from './send-shared.ts';
import { appendResults, wholeOption, onCleanup, startChild, stopChild, printUsage, runMain, sleep, monotonicUs, processCpuSeconds, machineBusySeconds, memoryOf, loadAverage, machineFacts, percentile } from './common.ts';

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
if (args.help) printUsage(import.meta.url);
const yardsticks = (raw: string): Variant[] => {
  if (raw === 'none' || raw === '') return [];
  const names = raw.split(',').map((s) => s.trim());
  for (const name of names) if (!(VARIANTS as readonly string[]).includes(name)) throw new Error(`--yardsticks: unknown "${name}"; one of ${VARIANTS.join(', ')} or none`);
  return VARIANTS.filter((v) => names.includes(v));
};
const options = {
  emails: wholeOption('emails', args.emails, 1),
  warmup: wholeOption('warmup', args.warmup, 0),
  connections: wholeOption('connections', args.connections, 1),
  inFlight: wholeOption('in-flight', args['in-flight'], 1),
  yardsticks: yardsticks(args.yardsticks!),
  platform: !args['no-platform'],
  emailRate: wholeOption('email-rate', args['email-rate'], 0),
  note: args.note,
  record: !args['no-record'] && !args['cpu-prof'],
  cpuProf: args['cpu-prof']!,
};

// ---- child processes and temp dirs, cleaned up on every way out ---------------------------------





// ---- CPU and memory -------------------------------------------------------------------------------


// ---- phase 1: yardsticks ------------------------------------------------------------------------

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
    `${settled.signed} DKIM-signed${dkimExpected ? '' : ' (none expected)'}, ${meanBytes(settled).toFixed(0)} bytes each on average: ` +
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
  const platform = await startPlatform(sink, dnsServer, profileDir, { EMAIL_RATE_PER_SECOND: String(options.emailRate) });
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
      `${stats.signed} DKIM-signed, ${meanBytes(stats).toFixed(0)} bytes each on average: ` +
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

// ---- profiles -----------------------------------------------------------------------------------

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
    appendResults('send', 'Sending benchmark results', {
      startedAt,
      facts,
      config: [
        `config: ${options.emails} measured emails per phase after ${options.warmup} warm-up ones; yardsticks: ${POOL_SIZE} pooled connections, ` +
          `${options.inFlight} emails in flight; platform: ${Math.min(options.connections, options.emails)} connections, 1 request in flight each, ` +
          `1 recipient per request, EMAIL_RATE_PER_SECOND=${options.emailRate}, API_RATE_PER_MINUTE=0`,
      ],
      note: options.note,
      body: [markdown, '', ...details.map((line) => `- ${line}`)],
    });
  }
  return checks.every((c) => c.ok) ? 0 : 1;
}

await runMain(main);
