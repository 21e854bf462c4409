/**
 * Benchmark: one campaign to many recipients, from `POST /campaigns/:id/send` to the last email
 * at a loopback SMTP sink, next to raw nodemailer sending the same email into the same sink in
 * the same run.
 *
 *   node --import tsx bench/campaign.ts [--recipients 100000] [--yardstick-emails 20000]
 *        [--warmup 20000] [--email-rate 1000000] [--batch-size N] [--no-yardstick] [--compare-ref <git ref>]
 *        [--modes embedded,distributed] [--mailer-replicas 1,2] [--dkim-signing platform|relay]
 *        [--relay-rtt-ms 0] [--paragraphs 0] [--yardstick-message campaign|transactional] [--smtp-connections 16] [--note "machine busy with ..."] [--no-record] [--cpu-prof]
 *        [--ref-first] [--rounds 1]
 *   npm run bench:campaign -- [same options]
 *
 * 1. Yardstick (its own child process, bench/send-yardstick.ts `dkim-nodelay`): nodemailer,
 *    pooled (as many connections as the mailer, `--smtp-connections`), TCP_NODELAY, nodemailer's
 *    built-in DKIM signing, four emails in flight per connection, the same HTML email (composed
 *    once), `--yardstick-emails` of them after `--warmup` unmeasured ones. It runs again after the platform (after
 *    every platform of the run), and "× yardstick" is against the mean rate of the two runs: the
 *    machine's speed moves by more than a third within an hour, and one yardstick run at a slow
 *    moment (1,229/s where that hour's others ran 1,805–1,824/s) had given a ratio of 1.96×.
 * 2. The platform, embedded, as `npm start` runs it (SMTP_URL at the sink, DNS_SERVERS at a DNS
 *    server run here, EMAIL_RATE_PER_SECOND=`--email-rate`: the limit lifted but its bookkeeping
 *    kept; CAMPAIGN_BATCH_SIZE=`--batch-size` when given). Over the public API: a verified user,
 *    a project, a sending domain verified through DNS. Then the platform is stopped, and
 *    `--recipients` + `--warmup` contacts are bulk-inserted into its store in the contact
 *    projection's shape (data `{group, name, order}`), and it is started again on that store.
 *    A warm-up campaign goes to the `warm` group (`--warmup` recipients, at most 500 distributed;
 *    its own rate is reported too, as the first campaign after a start); then the measured campaign (FILTERED:
 *    `data.group equals "main"`) is created and sent with `POST /campaigns/:id/send` and no body.
 *    Measured: from the send's answer to the Nth email counted by the sink (every one rendered
 *    with the contact's data, CSS-inlined, tracked, with List-Unsubscribe, DKIM-signed), the time
 *    to SENT, the platform's CPU and peak RSS (VmHWM) over its life, and (embedded) the cores each
 *    kind of its threads used over the same window (`/proc/<pid>/task`: the event loop, the
 *    sending thread, libuv's pool where the signatures run, V8's helpers), which says which of them
 *    sets the pace.
 * 3. Checks: the sink got each recipient exactly once, all signed; the campaign is SENT with
 *    `recipientCount` N and `delivered` N; the first email verifies (DKIM against the published
 *    key, CSS inlined, pixel, links rewritten, data rendered, List-Unsubscribe).
 *
 * `--dkim-signing relay`: the sending domain leaves DKIM to the relay (PATCH /domains/:id), so the
 * platform signs nothing, and the yardstick is nodemailer without DKIM (`nodelay`); every email
 * must then arrive unsigned.
 *
 * `--relay-rtt-ms N`: the sink sends every reply N ms late, as a relay N ms away would answer
 * (another zone or region; loopback's is some 50 µs): what the SMTP round trips per email cost.
 *
 * `--paragraphs N`: the email's body (the platform's campaign and the yardstick's alike) N
 * paragraphs of prose longer (bench/send-shared.ts, `bodyWith`): the same campaign at another
 * message size. Each check line gives the mean size on the wire.
 *
 * `--yardstick-message campaign|transactional`: what the yardstick sends. `campaign` (the default)
 * is the campaign's own message, marketing as the platform sends it: the project's footer and
 * List-Unsubscribe, so both sides put the same size on the wire (#15's targets are against a
 * yardstick "of the same message size"): 4.6 KB against the platform's 4.7 relay-signed. And
 * `transactional`, the template alone (3.4 KB), is the yardstick of sessions 10–41
 * (bench/results/campaign-profile.md, session 42).
 *
 * `--smtp-connections N`: the mailer's SMTP_CONNECTIONS (default its own default), and the
 * yardstick's pool: a far relay needs more.
 *
 * `--modes`: the platform's modes (default embedded), each step 2 once. `distributed` runs
 * `npm run start:distributed` (the whole stack) on a MongoDB-wire server the benchmark starts
 * (bench/mongo-server.ts: FerretDB on PostgreSQL, as the stack would), so that the contacts can be
 * bulk-inserted into it; CPU and memory are summed over every process of the stack and that server.
 * `--mailer-replicas 1,2` (distributed only; default 1): step 2 once per count, the stack started
 * with that many mailer apps (MAILER_REPLICAS), each behind its own sidecar, splitting the topic.
 *
 * `--compare-ref <ref>` (e.g. 6055d3e, the last commit with the journal store) checks that commit
 * out in a temporary git worktree and runs step 2 a second time with that commit's platform (and
 * its store for the bulk insert), into the same sink under their own recipient keys, right after
 * this tree's: a further row and column of the results. `--ref-first` runs the ref's before this
 * tree's: pairs in one order showed a change 6% cheaper one way and 6% dearer the other, so a
 * small change is judged by pairs each way (ABBA; bench/results/campaign-profile.md, session 20).
 * `--rounds N` (with `--compare-ref`) runs N such pairs, each the other way round from the one
 * before (ABBA…), and prints this tree's rate and CPU an email over the ref's for each pair and
 * their medians: on a machine whose speed moves by a fifth between minutes, the unchanged tree's
 * pairs spread over ±20%, so one pair each way cannot show a change of 10% (session 34).
 * `--rounds N` without `--compare-ref` runs the platform N times with the yardstick between every
 * two and around them (Y P Y P … Y), and prints each platform's rate and CPU an email over the mean
 * of the two yardstick runs beside it, and their medians: plain nodemailer's own CPU an email moved
 * from 0.79 to 0.48 ms within six minutes while the platform's stayed put (session 37), so one
 * run's ratio says more about the yardstick's moment than about the platform.
 *
 * Results are printed and appended to bench/results/campaign.md (unless --no-record or --cpu-prof).
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import PostalMime from 'postal-mime';
import { v7 } from 'uuid';
import { contacts, type ContactDoc } from '../domain/contacts/collection.ts';
import { startDnsServer } from '../test/harness/dns-server.ts';
import { MongoStore } from '../adapters/mongo/store.ts';
import { DEFAULT_SMTP_CONNECTIONS } from '../apps/mailer/connections.ts';
import { startMongoServer } from './mongo-server.ts';
import { Sink, checkSample, cpuSnapshot, cpuWindow, messageOf, printProfiles, setUp, startPlatform, type CpuWindow } from './mail-harness.ts';
import { SENDER_NAME, YARDSTICK_MESSAGES, bodyWith, SUBJECT, dataOf, meanBytes, recipientOf, type SinkStats, type YardstickConfig, type YardstickResult } from './send-shared.ts';
import { appendResults, currentTree, openTreeStore, treeLabel, worktreeOf, type Tree, wholeOption, modesOption, loadAverage, machineBusySeconds, machineFacts, median, memoryOf, monotonicUs, onCleanup, processCpuSeconds, printUsage, runMain, sleep, startChild, stopChild, threadCores, threadCpuSeconds } from './common.ts';

const { values: args } = parseArgs({
  options: {
    recipients: { type: 'string', default: '100000' },
    'yardstick-emails': { type: 'string', default: '20000' },
    warmup: { type: 'string', default: '20000' },
    'email-rate': { type: 'string', default: '1000000' },
    'batch-size': { type: 'string' },
    'no-yardstick': { type: 'boolean', default: false },
    'compare-ref': { type: 'string' },
    'ref-first': { type: 'boolean', default: false },
    rounds: { type: 'string', default: '1' },
    modes: { type: 'string', default: 'embedded' },
    'mailer-replicas': { type: 'string', default: '1' },
    'dkim-signing': { type: 'string', default: 'platform' },
    'relay-rtt-ms': { type: 'string', default: '0' },
    paragraphs: { type: 'string', default: '0' },
    'yardstick-message': { type: 'string', default: 'campaign' },
    'smtp-connections': { type: 'string', default: String(DEFAULT_SMTP_CONNECTIONS) },
    note: { type: 'string' },
    'no-record': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) printUsage(import.meta.url);
if (!['platform', 'relay'].includes(args['dkim-signing']!)) throw new Error('--dkim-signing is platform or relay');
if (!(YARDSTICK_MESSAGES as readonly string[]).includes(args['yardstick-message']!)) throw new Error(`--yardstick-message is one of ${YARDSTICK_MESSAGES.join(', ')}`);
const options = {
  modes: modesOption(args.modes!),
  mailerReplicas: args['mailer-replicas']!.split(',').map((n) => wholeOption('mailer-replicas', n.trim(), 1)),
  recipients: wholeOption('recipients', args.recipients, 1),
  yardstickEmails: wholeOption('yardstick-emails', args['yardstick-emails'], 1),
  warmup: wholeOption('warmup', args.warmup, 1),
  emailRate: wholeOption('email-rate', args['email-rate'], 0),
  batchSize: args['batch-size'] === undefined ? undefined : wholeOption('batch-size', args['batch-size'], 1),
  yardstick: !args['no-yardstick'],
  compareRef: args['compare-ref'],
  refFirst: args['ref-first']!,
  rounds: wholeOption('rounds', args.rounds, 1),
  cpuProf: args['cpu-prof']!,
  relaySigns: args['dkim-signing'] === 'relay',
  relayRttMs: wholeOption('relay-rtt-ms', args['relay-rtt-ms'], 0),
  paragraphs: wholeOption('paragraphs', args.paragraphs, 0),
  yardstickMessage: args['yardstick-message'] as NonNullable<YardstickConfig['message']>,
  smtpConnections: wholeOption('smtp-connections', args['smtp-connections'], 1),
  record: !args['no-record'] && !args['cpu-prof'],
};
if (options.rounds > 1 && !options.compareRef && !options.yardstick) throw new Error('--rounds needs --compare-ref (pairs of this tree and the ref) or the yardstick (a yardstick run between every two platforms)');
if (options.rounds > 1 && (options.modes.length > 1 || options.mailerReplicas.length > 1)) throw new Error('--rounds compares one platform shape: one mode, one mailer count');

/**
 * The warm-up campaign's recipients: `--warmup`, but at most 500 in distributed mode, where a
 * warm-up of 20,000 would take minutes (some 100 emails/s on FerretDB).
 */
const warmupOf = (mode: 'embedded' | 'distributed') => (mode === 'distributed' ? Math.min(options.warmup, 500) : options.warmup);

const fmt = (n: number, decimals: number) => (Number.isFinite(n) ? n.toFixed(decimals) : 'n/a');

// ---- the yardstick ------------------------------------------------------------------------------

interface Phase {
  name: string;
  emails: number;
  seconds: number;
  cpu: CpuWindow;
  peakMiB: number;
  check: { ok: boolean; text: string };
  window: { startUs: number; endUs: number };
  profileDir?: string;
  loadBefore: string;
}

/** A sink key's mean message size on the wire. */
const meanSize = (stats: SinkStats) => `${fmt(meanBytes(stats) / 1000, 1)} KB`;

/** Where a yardstick run stands: before the platform, after it, or after round N of yardstick rounds. */
type YardstickPlace = 'before' | 'after' | number;
const placeName = (place: YardstickPlace) => (typeof place === 'number' ? `after round ${place}` : place);

async function runYardstick(sink: Sink, profileRoot: string | undefined, place: YardstickPlace): Promise<Phase> {
  const when = placeName(place);
  const key = place === 'before' ? 'yd' : place === 'after' ? 'yda' : `yd${place}`;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const config: YardstickConfig = {
    variant: options.relaySigns ? 'nodelay' : 'dkim-nodelay',
    smtpUrl: sink.url,
    key,
    warmupKey: `${key}w`,
    count: options.yardstickEmails,
    warmup: options.warmup,
    // As many connections as the platform's mailer keeps (transport.ts), and enough in flight to fill them.
    inFlight: 4 * options.smtpConnections,
    poolSize: options.smtpConnections,
    domain: 'yardstick.example',
    selector: 'bench',
    privateKeyPem: privateKey,
    // As long as the platform's own (a five-digit port): it is in every tracked link.
    publicUrl: 'http://127.0.0.1:30000',
    paragraphs: options.paragraphs,
    message: options.yardstickMessage,
  };
  const loadBefore = loadAverage();
  console.error(`[yardstick] nodemailer pool ×${options.smtpConnections}${options.relaySigns ? '' : ' + DKIM'} + NODELAY: ${options.yardstickEmails} emails (load average ${loadBefore})`);
  const profileDir = profileRoot && join(profileRoot, `yardstick-${when.replaceAll(' ', '-')}`);
  const proc = startChild('yardstick', 'bench/send-yardstick.ts', { ...process.env, BENCH_YARDSTICK: JSON.stringify(config) }, profileDir);
  const sinkBefore = processCpuSeconds(sink.proc.pid);
  const busyBefore = machineBusySeconds();
  const startedUs = monotonicUs();
  let peakMiB = 0;
  const sampler = setInterval(() => {
    try {
      peakMiB = Math.max(peakMiB, memoryOf(proc.pid).peakMiB);
    } catch {
      // exited
    }
  }, 200);
  const result = await messageOf<YardstickResult>(proc, 'result', 30 * 60_000);
  clearInterval(sampler);
  if (proc.child.exitCode === null) await new Promise<void>((resolve) => proc.child.once('exit', () => resolve()));
  await stopChild(proc.child);
  if (result.errors) throw new Error(`[yardstick] ${result.errors} sends failed, first: ${result.firstError}`);
  await sink.waitFor(key, options.yardstickEmails, 10_000);
  await sleep(300);
  const stats = await sink.stats(key);
  const seconds = ((stats.lastUs ?? result.endUs) - result.startUs) / 1e6;
  const share = Math.min(1, seconds / ((monotonicUs() - startedUs) / 1e6));
  const sinkCpu = (processCpuSeconds(sink.proc.pid) - sinkBefore) * share;
  const busy = (machineBusySeconds() - busyBefore) * share;
  const ok =
    stats.count === options.yardstickEmails && stats.distinct === options.yardstickEmails && stats.duplicates === 0 && stats.signed === (options.relaySigns ? 0 : stats.count);
  return {
    name: `raw nodemailer: pool ×${options.smtpConnections}, TCP_NODELAY, ${options.relaySigns ? 'no DKIM' : 'built-in DKIM'} (yardstick, ${typeof place === 'number' ? when : `${when} the platform`})`,
    emails: options.yardstickEmails,
    seconds,
    cpu: { sender: result.cpuSeconds, sink: sinkCpu, self: 0, others: Math.max(0, busy - result.cpuSeconds - sinkCpu), wall: seconds },
    peakMiB,
    check: {
      ok,
      text: `yardstick ${when}: sent ${options.yardstickEmails}, sink counted ${stats.count} (${stats.distinct} distinct, ${stats.duplicates} duplicates, ${stats.signed} DKIM-signed, ${meanSize(stats)} each): ${ok ? 'OK' : 'MISMATCH'}`,
    },
    window: { startUs: result.startUs, endUs: stats.lastUs ?? result.endUs },
    profileDir,
    loadBefore,
  };
}

// ---- the platform -------------------------------------------------------------------------------

/** The sink keys of one platform's emails: each platform of a run sends to its own. */
interface Keys {
  owner: string;
  warm: string;
  main: string;
}

/** Bulk-inserts the campaign's contacts into the (stopped) platform's store, as projections. */
async function insertContacts(tree: Tree, dataDir: string, projectId: string, keys: Keys, warmup: number, mongodbUrl?: string): Promise<void> {
  // As that tree's runtime/embedded.ts opens it, or the distributed stack's database.
  const store = mongodbUrl ? await MongoStore.connect(mongodbUrl) : await openTreeStore(tree, dataDir);
  try {
    const at = Date.now() - 86_400_000;
    let n = 0;
    const make = (group: 'warm' | 'main', key: string, i: number): ContactDoc => {
      const iso = new Date(at + n).toISOString();
      const { name, order } = dataOf(i);
      return {
        _id: v7({ msecs: at + n, seq: n++ & 0xffff }),
        projectId,
        email: recipientOf(key, i),
        subscribed: true,
        data: { group, name, order },
        createdAt: iso,
        updatedAt: iso,
      };
    };
    await store.collection('data_fields').insertMany(
      ['group', 'name', 'order'].map((key) => ({ _id: `${projectId}/${key}`, projectId, key, types: ['string'] })),
    );
    const collection = contacts(store);
    const batches: [('warm' | 'main'), string, number][] = [['warm', keys.warm, warmup], ['main', keys.main, options.recipients]];
    for (const [group, key, count] of batches) {
      for (let i = 0; i < count; i += 10_000) {
        await collection.insertMany(Array.from({ length: Math.min(10_000, count - i) }, (_, j) => make(group, key, i + j)));
      }
    }
  } finally {
    await store.close();
  }
}

interface PlatformOutcome {
  /** The column's heading: which store. */
  label: string;
  phase: Phase;
  sendAnsweredMs: number;
  firstEmailS: number;
  sentS: number;
  startMiB: number;
  campaign: Record<string, unknown>;
  stats: Record<string, unknown>;
  sampleChecks: string[];
  /** Emails a second in each tenth of the audience, in the order they reached the sink: a rate that falls as the store grows shows here. */
  tenths: number[];
  /** The warm-up campaign, the first after the platform's start: its recipients and their rate (send → last email at the sink). */
  warmup: { emails: number; rate: number };
  logTail: string;
  logLines: number;
  /** Embedded: the cores each kind of the platform's threads used over the measured window (threadCores). */
  threads?: string;
}

async function runPlatform(
  sink: Sink,
  tree: Tree,
  keys: Keys,
  profileRoot: string | undefined,
  mode: 'embedded' | 'distributed',
  mailers = 1,
): Promise<PlatformOutcome> {
  const other = tree.root !== currentTree().root;
  const distributed = mode === 'distributed';
  const shape = distributed ? `distributed, ${mailers} mailer${mailers === 1 ? '' : 's'}` : '';
  const tag = `platform${distributed ? `-distributed-${mailers}m` : ''}${other ? `@${tree.commit}` : ''}`;
  const label = distributed ? `${shape}${other ? ` @ ${tree.commit}` : ''}` : treeLabel(tree);
  const mongo = distributed ? await startMongoServer('mailroom') : undefined;
  if (mongo) onCleanup(() => mongo.stop());
  const dns = await startDnsServer();
  onCleanup(() => dns.close());
  const settings: Record<string, string> = {
    EMAIL_RATE_PER_SECOND: String(options.emailRate),
    SMTP_CONNECTIONS: String(options.smtpConnections),
    ...(options.batchSize ? { CAMPAIGN_BATCH_SIZE: String(options.batchSize) } : {}),
    ...(distributed ? { MAILER_REPLICAS: String(mailers) } : {}),
  };
  // The distributed stack stops its tiers one after another (up to 5 s each, more with mailer
  // replicas): killed early, it would leave them running, their etcd and ports held.
  const stopGraceMs = distributed ? 60_000 : undefined;
  const warmup = warmupOf(mode);
  const first = await startPlatform(sink, dns, undefined, settings, undefined, tree.root, mongo?.url);
  const { secretKey, domain, projectId } = await setUp(first, sink, dns, keys.owner, options.relaySigns ? 'relay' : 'platform');
  await stopChild(first.proc.child, stopGraceMs);
  console.error(`[${tag}] inserting ${warmup} + ${options.recipients} contacts into its store (${label})`);
  await insertContacts(tree, first.dataDir, projectId, keys, warmup, mongo?.url);
  const loadBefore = loadAverage();
  const profileDir = profileRoot && join(profileRoot, tag);
  const platform = await startPlatform(sink, dns, profileDir, settings, first.dataDir, tree.root, mongo?.url);
  const senderCpu = () => platform.cpu() + (mongo?.cpuSeconds() ?? 0);
  const as = { auth: secretKey };
  const { api } = platform;
  try {
    const campaign = async (group: string) => {
      const created = await api.post(
        '/campaigns',
        {
          name: `Bench ${group}`,
          subject: SUBJECT,
          body: bodyWith(options.paragraphs),
          from: `hello@${domain}`,
          fromName: SENDER_NAME,
          audienceType: 'FILTERED',
          audienceCondition: { logic: 'AND', groups: [{ filters: [{ field: 'data.group', operator: 'equals', value: group }] }] },
        },
        as,
      );
      if (created.status !== 200) throw new Error(`creating the campaign failed (${created.status}): ${JSON.stringify(created.body)}`);
      return created.body.data.id as string;
    };
    const waitSent = async (id: string, timeoutMs: number) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const res = await api.get(`/campaigns/${id}`, as);
        if (res.body.data?.status === 'SENT') return res.body.data as Record<string, unknown>;
        if (Date.now() > deadline) throw new Error(`campaign ${id} not SENT within ${timeoutMs / 1000} s: ${JSON.stringify(res.body.data)}`);
        await sleep(250);
      }
    };

    console.error(`[${tag}] warm-up campaign: ${warmup} recipients`);
    const warm = await campaign('warm');
    const warmStartUs = monotonicUs();
    const warmSent = await api.post(`/campaigns/${warm}/send`, undefined, as);
    if (warmSent.status !== 200) throw new Error(`sending the warm-up campaign failed (${warmSent.status}): ${JSON.stringify(warmSent.body)}`);
    const warmStats = await sink.waitFor(keys.warm, warmup, 60_000);
    const warmRate = (warmup * 1e6) / Math.max(1, (warmStats.lastUs ?? monotonicUs()) - warmStartUs);
    await waitSent(warm, 60_000);

    const id = await campaign('main');
    const startMiB = platform.memory().rssMiB;
    console.error(`[${tag}] measured campaign: ${options.recipients} recipients (load average ${loadBefore})`);
    // Embedded, the platform is one process: which of its threads set the pace shows in theirs.
    const threadsOf = () => (distributed ? undefined : threadCpuSeconds(platform.proc.pid));
    const threadsBefore = threadsOf();
    const before = cpuSnapshot(senderCpu, sink.proc.pid);
    const sent = await api.post(`/campaigns/${id}/send`, undefined, as); // no body: "send now"
    const answeredUs = monotonicUs();
    if (sent.status !== 200) throw new Error(`sending the campaign failed (${sent.status}): ${JSON.stringify(sent.body)}`);
    let reached: ReturnType<typeof cpuSnapshot> | undefined;
    let threadsReached: ReturnType<typeof threadsOf>;
    await sink.waitFor(keys.main, options.recipients, 120_000, () => {
      reached = cpuSnapshot(senderCpu, sink.proc.pid);
      threadsReached = threadsOf();
    });
    const done = await waitSent(id, 120_000);
    const sentUs = monotonicUs();
    await sleep(1_000); // a late duplicate would show here
    const stats = await sink.stats(keys.main, true);
    const { peakMiB } = platform.memory();
    const campaignStats = (await api.get(`/campaigns/${id}/stats`, as)).body.data as Record<string, unknown>;
    const endUs = stats.lastUs ?? monotonicUs();
    const seconds = (endUs - before.atUs) / 1e6;
    const cpu = cpuWindow(before, reached!);

    const expected = new Set(Array.from({ length: options.recipients }, (_, i) => recipientOf(keys.main, i)));
    const received = stats.recipients ?? [];
    const strangers = received.filter((r) => !expected.has(r)).length;
    const ok =
      stats.count === options.recipients &&
      stats.distinct === options.recipients &&
      stats.duplicates === 0 &&
      strangers === 0 &&
      stats.signed === (options.relaySigns ? 0 : stats.count) &&
      done.recipientCount === options.recipients &&
      campaignStats.delivered === options.recipients;
    const sampleChecks = (await checkSample(stats.sample, domain, dns, platform.url)).map((check) =>
      // Left to the relay: the platform's email must carry no signature at all.
      options.relaySigns && check.includes('DKIM of the first email') ? `${/: (none|no signature) \(/.test(check) ? 'OK' : 'FAILED'}: no DKIM signature (left to the relay)` : check,
    );
    const parsed = stats.sample ? await PostalMime.parse(Buffer.from(stats.sample, 'base64')) : undefined;
    const unsubscribe = parsed?.headers.find((h) => h.key === 'list-unsubscribe')?.value ?? '';
    sampleChecks.push(`${unsubscribe.includes(`${platform.url}/`) ? 'OK' : 'FAILED'}: List-Unsubscribe header (marketing mail)`);
    return {
      label,
      phase: {
        name: distributed
          ? `**platform** (${shape}${other ? ` @ ${tree.commit}` : ''}, CPU and memory of every process of the stack and its FerretDB/PostgreSQL): campaign send → Nth email at the sink`
          : `**platform** (embedded, ${treeLabel(tree)}): campaign send → Nth email at the sink`,
        emails: stats.count,
        seconds,
        cpu,
        peakMiB,
        check: {
          ok: ok && sampleChecks.every((c) => c.startsWith('OK')),
          text:
            `${tag}: campaign to ${options.recipients} contacts; the sink counted ${stats.count} (${stats.distinct} distinct, ${stats.duplicates} duplicates, ` +
            `${strangers} not in the audience, ${stats.signed} DKIM-signed, ${meanSize(stats)} each); campaign ${done.status}, recipientCount ${done.recipientCount}; stats ${JSON.stringify(campaignStats)}: ` +
            (ok ? 'OK' : 'MISMATCH'),
        },
        window: { startUs: before.atUs, endUs },
        profileDir,
        loadBefore,
      },
      sendAnsweredMs: (answeredUs - before.atUs) / 1000,
      firstEmailS: ((stats.firstUs ?? endUs) - before.atUs) / 1e6,
      sentS: (sentUs - before.atUs) / 1e6,
      startMiB,
      campaign: done,
      stats: campaignStats,
      sampleChecks,
      tenths: ratesByTenth(before.atUs, stats.times ?? []),
      warmup: { emails: warmup, rate: warmRate },
      logTail: platform.proc.logTail(),
      logLines: platform.proc.logLines(),
      ...(threadsBefore && threadsReached ? { threads: threadCores(threadsBefore, threadsReached, cpu.wall) } : {}),
    };
  } catch (err) {
    console.error(`[${tag}] failed; last output:\n${platform.proc.logTail()}`);
    throw err;
  } finally {
    await stopChild(platform.proc.child, stopGraceMs);
    await mongo?.stop();
  }
}

// ---- report -------------------------------------------------------------------------------------

/** Emails a second over a phase. */
const rate = (p: Phase) => p.emails / p.seconds;
/** A sender's CPU an email (ms): the platform's, or the yardstick's. */
const phaseCpuPerEmail = (p: Phase) => (1000 * p.cpu.sender) / p.emails;
/** The platform's CPU an email (ms). */
const cpuPerEmail = (p: PlatformOutcome) => phaseCpuPerEmail(p.phase);

function table(yardsticks: Phase[], platforms: PlatformOutcome[]): string {
  const rows = [...yardsticks, ...platforms.map((p) => p.phase)];
  // Against the mean of the runs before and after the platform's: the machine's speed moves.
  const yardstick = yardsticks.length ? yardsticks.reduce((sum, p) => sum + rate(p), 0) / yardsticks.length : undefined;
  // The second table: one column per platform, and this tree's over the other's when compared.
  const [here, other] = platforms;
  const row = (label: string, value: (p: PlatformOutcome) => number, decimals: number, ratio = true, bold = false) => {
    const cells = platforms.map((p) => (bold ? `**${fmt(value(p), decimals)}**` : fmt(value(p), decimals)));
    if (other) cells.push(ratio ? `${fmt(value(here) / value(other), 2)}×` : '');
    return `| ${bold ? `**${label}**` : label} | ${cells.join(' | ')} |`;
  };
  const lines = [
    `| sender → ${options.relayRttMs ? `sink answering ${options.relayRttMs} ms late` : 'loopback sink'} | emails | emails/s | × yardstick (mean of its runs) | sender CPU per email (ms) | sender CPU (cores) | sink CPU per email (ms) | other processes CPU (cores) | sender peak RSS, VmHWM (MiB) |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (p) =>
        `| ${p.name} | ${p.emails} | ${fmt(rate(p), 0)} | ${yardstick ? `${fmt(rate(p) / yardstick, 2)}×` : 'n/a'} | ${fmt(phaseCpuPerEmail(p), 3)} | ` +
        `${fmt(p.cpu.sender / p.cpu.wall, 2)} | ${fmt((1000 * p.cpu.sink) / p.emails, 3)} | ${fmt(p.cpu.others / p.cpu.wall, 2)} | ${fmt(p.peakMiB, 0)} |`,
    ),
    '',
    `| campaign (platform) | ${platforms.map((p) => p.label).join(' | ')}${other ? ` | ${here.label} ÷ ${other.label}` : ''} |`,
    `| --- | ${platforms.map(() => '---:').join(' | ')}${other ? ' | ---:' : ''} |`,
    row('recipients', (p) => p.phase.emails, 0, false),
    row('POST /campaigns/:id/send answered (ms)', (p) => p.sendAnsweredMs, 0),
    row('first email at the sink (s after the send)', (p) => p.firstEmailS, 2),
    row('Nth email at the sink (s)', (p) => p.phase.seconds, 1),
    row('campaign SENT seen (s)', (p) => p.sentS, 1),
    row('emails/s, send → Nth email at the sink', (p) => rate(p.phase), 0, true, true),
    row('platform CPU per email (ms; campaign batches, mailer, results)', cpuPerEmail, 3),
    `| RSS before the send / peak RSS over its life, VmHWM (MiB) | ${platforms.map((p) => `${fmt(p.startMiB, 0)} / ${fmt(p.phase.peakMiB, 0)}`).join(' | ')}${other ? ' | ' : ''} |`,
  ];
  return lines.join('\n');
}

/** One round of --rounds: this tree's platform and the ref's, and which of them ran first. */
interface Pair {
  here: PlatformOutcome;
  ref: PlatformOutcome;
  refFirst: boolean;
}

/** This tree's rate and CPU an email over the ref's, pair by pair, and their medians. */
function roundsSummary(pairs: Pair[]): string {
  const faster = ({ here, ref }: Pair) => rate(here.phase) / rate(ref.phase);
  const dearer = ({ here, ref }: Pair) => cpuPerEmail(here) / cpuPerEmail(ref);
  const each = pairs.map(
    (pair) =>
      `${fmt(faster(pair), 2)}× (${fmt(rate(pair.here.phase), 0)} / ${fmt(rate(pair.ref.phase), 0)}/s, CPU ${fmt(dearer(pair), 2)}×${pair.refFirst ? ', ref first' : ''})`,
  );
  return (
    `this tree over the ref, round by round (emails/s; CPU an email): ${each.join('; ')}; ` +
    `median ${fmt(median(pairs.map(faster)), 2)}× the rate, ${fmt(median(pairs.map(dearer)), 2)}× the CPU an email`
  );
}

/**
 * Yardstick rounds: each platform's rate and CPU an email over the mean of the two yardstick runs
 * beside it (`yardsticks[r]` before round r, `yardsticks[r + 1]` after), and their medians.
 */
function yardstickRoundsSummary(yardsticks: Phase[], platforms: PlatformOutcome[]): string {
  const around = (r: number, of: (p: Phase) => number) => (of(yardsticks[r]) + of(yardsticks[r + 1])) / 2;
  const faster = platforms.map((p, r) => rate(p.phase) / around(r, rate));
  const cheaper = platforms.map((p, r) => cpuPerEmail(p) / around(r, phaseCpuPerEmail));
  const each = platforms.map(
    (p, r) => `${fmt(faster[r], 2)}× (${fmt(rate(p.phase), 0)} / ${fmt(around(r, rate), 0)}/s, CPU ${fmt(cheaper[r], 2)}×: ${fmt(cpuPerEmail(p), 3)} / ${fmt(around(r, phaseCpuPerEmail), 3)} ms)`,
  );
  return (
    `the platform over the yardstick runs beside it, round by round (emails/s; CPU an email): ${each.join('; ')}; ` +
    `median ${fmt(median(faster), 2)}× the rate, ${fmt(median(cheaper), 2)}× the CPU an email`
  );
}

/** Emails a second over each tenth of `times` (the sink's arrival times, from `startUs`). */
function ratesByTenth(startUs: number, times: number[]): number[] {
  const sorted = [...times].sort((a, b) => a - b);
  const rates: number[] = [];
  let from = startUs;
  for (let tenth = 1; tenth <= 10 && sorted.length >= 10; tenth++) {
    const last = Math.ceil((sorted.length * tenth) / 10) - 1;
    const first = Math.ceil((sorted.length * (tenth - 1)) / 10);
    rates.push(((last - first + 1) * 1e6) / Math.max(1, sorted[last] - from));
    from = sorted[last];
  }
  return rates;
}

async function main(): Promise<number> {
  const facts = machineFacts();
  const startedAt = new Date();
  const profileRoot = options.cpuProf ? await mkdtemp(join(tmpdir(), 'mailroom-bench-profiles-')) : undefined;
  const sink = await Sink.start(options.relayRttMs);
  console.error(`[sink] listening on ${sink.url}`);
  const yardsticks: Phase[] = [];
  const measureYardstick = async (place: YardstickPlace) => {
    if (!options.yardstick) return;
    const run = await runYardstick(sink, profileRoot, place);
    console.error(`[yardstick ${placeName(place)}] ${fmt(rate(run), 0)} emails/s`);
    yardsticks.push(run);
  };
  /** `--rounds` without `--compare-ref`: the yardstick runs between the rounds (Y P Y P … Y). */
  const yardstickRounds = options.rounds > 1 && !options.compareRef;
  await measureYardstick('before');
  // This tree's platform, then (--compare-ref) the ref's (or the other way round: --ref-first),
  // each under its own sink keys; reported in that order, this tree's first, whichever ran first.
  const trees = [currentTree(), ...(options.compareRef ? [await worktreeOf(options.compareRef)] : [])];
  const runOrder = options.refFirst ? [...trees.keys()].reverse() : [...trees.keys()];
  const platforms: PlatformOutcome[] = [];
  /** Each round's pair (with --rounds). */
  const pairs: Pair[] = [];
  for (const mode of options.modes) {
    for (const mailers of mode === 'distributed' ? options.mailerReplicas : [1]) {
      for (let round = 0; round < options.rounds; round++) {
        const ran: PlatformOutcome[] = [];
        const order = round % 2 === 0 ? runOrder : [...runOrder].reverse();
        for (const i of order) {
          const p = `${mode === 'distributed' ? `d${mailers === 1 ? '' : `m${mailers}`}` : ''}${i === 0 ? '' : `r${i}`}${round === 0 ? '' : `k${round}`}`;
          const platform = await runPlatform(sink, trees[i], { owner: `${p}owner`, warm: `${p}cw`, main: `${p}cm` }, profileRoot, mode, mailers);
          if (options.rounds > 1) {
            platform.label += ` (round ${round + 1})`;
            platform.phase.name += ` (round ${round + 1})`;
          }
          console.error(`[${platform.label}] ${fmt(rate(platform.phase), 0)} emails/s`);
          ran[i] = platform;
        }
        platforms.push(...ran);
        if (yardstickRounds) await measureYardstick(round + 1);
        else if (options.rounds > 1) pairs.push({ here: ran[0], ref: ran[1], refFirst: order[0] !== 0 });
      }
    }
  }
  if (!yardstickRounds) await measureYardstick('after');

  const checks = [...yardsticks.map((y) => y.check), ...platforms.map((p) => p.phase.check)];
  const details = [
    ...checks.map((c) => c.text),
    ...platforms.map((p) => `platform (${p.label}) sample (the first email as received): ${p.sampleChecks.join('; ')}`),
    ...platforms.map((p) => `platform (${p.label}) emails/s by tenth of the audience: ${p.tenths.map((rate) => fmt(rate, 0)).join(', ')}`),
    ...platforms.flatMap((p) => (p.threads ? [`platform (${p.label}) cores by thread over the measured window (the send to the Nth email): ${p.threads}`] : [])),
    ...platforms.map((p) => `platform (${p.label}) warm-up campaign, the first after its start (not measured above): ${p.warmup.emails} emails at ${fmt(p.warmup.rate, 0)}/s`),
    ...(pairs.length > 0 ? [roundsSummary(pairs)] : []),
    ...(yardstickRounds ? [yardstickRoundsSummary(yardsticks, platforms)] : []),
    `load average before: ${yardsticks.map((y) => `yardstick ${y.loadBefore}; `).join('')}` +
      platforms.map((p) => `platform (${p.label}) ${p.phase.loadBefore}, printed ${p.logLines} log lines at warn and above`).join('; '),
  ];
  const markdown = table(yardsticks, platforms);
  console.log(`\n${markdown}\n`);
  for (const line of details) console.log(`- ${line}`);
  for (const p of platforms) if (p.logLines) console.log(`\nlast lines the platform (${p.label}) printed:\n${p.logTail}`);
  if (profileRoot) printProfiles([...yardsticks, ...platforms.map((p) => p.phase)] as never);

  if (options.record) {
    appendResults('campaign', 'Campaign benchmark results', {
      startedAt,
      facts,
      config: [
        `config: ${options.recipients} recipients after a ${options.warmup}-recipient warm-up campaign${options.modes.includes('distributed') && warmupOf('distributed') !== options.warmup ? ` (${warmupOf('distributed')} distributed)` : ''}; EMAIL_RATE_PER_SECOND=${options.emailRate}, ` +
          `CAMPAIGN_BATCH_SIZE=${options.batchSize ?? '500 (default)'}, SMTP_CONNECTIONS=${options.smtpConnections}; ${options.relayRttMs ? `the sink's replies ${options.relayRttMs} ms late (a relay that far); ` : ''}DKIM signing: ${options.relaySigns ? 'left to the relay (none by the platform or the yardstick)' : 'by the platform'}; ${options.paragraphs ? `the body ${options.paragraphs} paragraphs longer (\`--paragraphs\`); ` : ''}yardstick: ${options.yardstick ? `${options.yardstickMessage === 'campaign' ? "the campaign's message" : 'a transactional message (`--yardstick-message transactional`)'}, ${options.yardstickEmails} emails after ${options.warmup} unmeasured ones, ${4 * options.smtpConnections} in flight, ${yardstickRounds ? `run before the platform's ${options.rounds} rounds and after each, each round against the mean of the runs beside it` : 'run before and after the platform, × yardstick against the mean of the two'}` : 'skipped'}` +
          (options.modes.includes('distributed') ? `; distributed: ${options.mailerReplicas.join(', ')} mailer replica(s) (MAILER_REPLICAS)` : ''),
        ...trees
          .slice(1)
          .map((tree) => `compared with: \`--compare-ref ${tree.ref}\` = ${tree.commit} (${treeLabel(tree)}), its platform run from a git worktree of that commit, ${options.refFirst ? 'before' : 'after'} this tree's${options.rounds > 1 ? `, in ${options.rounds} rounds, each the other way round from the one before` : ''}`),
      ],
      note: args.note,
      body: [markdown, '', ...details.map((line) => `- ${line}`)],
    });
  }
  return checks.every((c) => c.ok) ? 0 : 1;
}

await runMain(main);
