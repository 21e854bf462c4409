// bench:workflows — N workflow executions waiting on a DELAY at the same time, in the embedded
// actor host: how late their wake-ups are, and how much memory each waiting execution costs.
//
// It drives the real WorkflowExecutionActor on the embedded adapters (store, actor host, pub/sub)
// in this process, without HTTP: a workflow TRIGGER → DELAY(D s) → EXIT is written to the store,
// then N executions are started through the actor runtime (as the events subscriber does), each
// waiting on its own reminder. Memory is read once all N wait and every actor activation has gone
// idle (the host keeps an active actor's state cached for 60 s); lateness is read as they wake.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { EmbeddedPubSub } from '../adapters/embedded/pubsub.ts';
import { EmbeddedActorHost } from '../adapters/embedded/actor-host.ts';
import { MemoryRateLimiter } from '../adapters/embedded/rate-limiter.ts';
import { FileBlobStore } from '../adapters/files/blobs.ts';
import { SqliteStore } from '../adapters/sqlite/store.ts';
import { WORKFLOW_EXECUTION_ACTOR, workflowExecutionActor } from '../actors/workflow-execution/actor.ts';
import type { ExecutionState } from '../actors/workflow-execution/behaviour.ts';
import { ensureWorkflowIndexes, workflowExecutions, workflows, workflowSteps, workflowTransitions } from '../domain/workflows/collection.ts';
import { executionIdFor } from '../domain/workflows/triggers.ts';
import { loadConfig } from '../runtime/config.ts';
import type { Platform } from '../runtime/platform.ts';
import { appendResults, wholeOption, loadAverage, machineBusySeconds, machineFacts, percentile, processCpuSeconds, runMain, sleep, tempDir } from './common.ts';

const { values: args } = parseArgs({
  options: {
    executions: { type: 'string', default: '100000' },
    delay: { type: 'string', default: '180' },
    concurrency: { type: 'string', default: '64' },
    'idle-ms': { type: 'string', default: '60000' },
    note: { type: 'string', default: '' },
    'no-record': { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});

if (args.help) {
  console.log(`node --expose-gc --import tsx bench/workflows.ts [options]
  --executions N     executions waiting at once (default 100000)
  --delay S          the DELAY in seconds (default 180: every start and the idle time fit in it)
  --concurrency C    starts in flight at once (default 64)
  --idle-ms MS       the actor host's idle time before it drops an activation (default 60000, as in production)
  --note TEXT        written into the results
  --no-record        print only; don't append to bench/results/workflows.md`);
  process.exit(0);
}

const N = wholeOption('executions', args.executions, 1);
const CONCURRENCY = wholeOption('concurrency', args.concurrency, 1);
const IDLE_MS = wholeOption('idle-ms', args['idle-ms'], 0);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error('run with node --expose-gc (npm run bench:workflows does)');
  process.exit(2);
}

function heapAfterGc(): { heap: number; rss: number; external: number } {
  for (let i = 0; i < 3; i++) gc!();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, rss: m.rss, external: m.external + m.arrayBuffers };
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

async function main() {
  const startedAt = new Date();
  const dir = await tempDir('mailroom-bench-');
  const config = loadConfig({ ...process.env, DATA_DIR: dir, LOG_LEVEL: 'silent' });
  const store = await SqliteStore.open(join(dir, 'mailroom.db'));
  const actors = new EmbeddedActorHost(store, { idleMs: IDLE_MS });
  const pubsub = new EmbeddedPubSub(store);
  const p: Platform = { config, store, actors, pubsub, limiter: new MemoryRateLimiter(), blobs: new FileBlobStore(join(dir, 'blobs')), log: pino({ level: 'silent' }) } as Platform;
  await ensureWorkflowIndexes(store);

  // Lateness: when each reminder's turn begins, against the time the execution waits until.
  const lateMs = new Float64Array(N);
  const doneLateMs = new Float64Array(N);
  let woken = 0;
  let firstWakeAt = 0;
  let lastWakeAt = 0;
  const definition = workflowExecutionActor(p);
  const onReminder = definition.onReminder!;
  definition.onReminder = async (ctx, name, payload) => {
    const began = Date.now();
    const state = (await ctx.loadState()) as ExecutionState | undefined;
    const until = state?.wait ? Date.parse(state.wait.until) : NaN;
    await onReminder(ctx, name, payload);
    if (Number.isFinite(until) && woken < N) {
      lateMs[woken] = began - until;
      doneLateMs[woken] = Date.now() - until;
      woken++;
      if (!firstWakeAt) firstWakeAt = Date.now();
      lastWakeAt = Date.now();
    }
  };
  actors.register(definition);
  await actors.start();
  await pubsub.start();

  const at = new Date().toISOString();
  const projectId = 'bench-project';
  const workflowId = 'bench-workflow';
  const delayStep = 'step-delay';
  const delaySeconds = Number(args.delay);

  const writeWorkflow = async (seconds: number) => {
    await workflows(store).replaceOne(
      { _id: workflowId },
      { _id: workflowId, projectId, name: 'bench', description: null, eventName: 'bench', enabled: true, allowReentry: true, triggerType: 'EVENT', triggerConfig: null, createdAt: at, updatedAt: at },
      { upsert: true },
    );
    for (const [id, type, config] of [['step-trigger', 'TRIGGER', {}], [delayStep, 'DELAY', { amount: seconds, unit: 'seconds' }], ['step-exit', 'EXIT', {}]] as const) {
      await workflowSteps(store).replaceOne({ _id: id }, { _id: id, projectId, workflowId, type, name: id, position: { x: 0, y: 0 }, config, createdAt: at, updatedAt: at }, { upsert: true });
    }
    for (const [id, from, to] of [['t1', 'step-trigger', delayStep], ['t2', delayStep, 'step-exit']]) {
      await workflowTransitions(store).replaceOne({ _id: id }, { _id: id, projectId, workflowId, fromStepId: from, toStepId: to, condition: null, priority: null, createdAt: at }, { upsert: true });
    }
  };

  const base = heapAfterGc();
  const cpu0 = processCpuSeconds('self');
  const busy0 = machineBusySeconds();
  const load0 = loadAverage();
  await writeWorkflow(delaySeconds);
  const tStart = Date.now();
  let next = 0;
  const worker = async () => {
    while (next < N) {
      const i = next++;
      const eventId = `event-${i}`;
      await actors.invoke(WORKFLOW_EXECUTION_ACTOR, executionIdFor(workflowId, eventId), 'start', {
        projectId,
        workflowId,
        contactId: `contact-${i}`,
        trigger: { eventId, name: 'bench', data: { plan: 'pro' } },
      });
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const startSeconds = (Date.now() - tStart) / 1000;
  const firstDue = tStart + delaySeconds * 1000;
  console.log(`started ${fmt(N)} executions in ${startSeconds.toFixed(1)} s (${fmt(N / startSeconds)}/s); DELAY ${delaySeconds} s`);

  const waiting = await workflowExecutions(store).countDocuments({ status: 'WAITING' });
  const hot = heapAfterGc();
  const activeHot = actors.activeActors;
  // Every activation idles out before the first wake-up: the steady state of executions that wait.
  const settleUntil = Math.min(firstDue - 3_000, Date.now() + IDLE_MS + 5_000);
  while (Date.now() < settleUntil) await sleep(500);
  const idle = heapAfterGc();
  const activeIdle = actors.activeActors;
  const reminders = actors.scheduledReminders;
  console.log(`waiting ${fmt(waiting)}; heap +${fmt((idle.heap - base.heap) / N)} B each once idle (${activeIdle} active actors, ${fmt(reminders)} reminders)`);

  while (woken < N && Date.now() < firstDue + startSeconds * 1000 + 120_000) await sleep(200);
  const completed = await workflowExecutions(store).countDocuments({ status: 'COMPLETED' });
  const cpu = processCpuSeconds('self') - cpu0;
  const busy = machineBusySeconds() - busy0;
  const wall = (Date.now() - tStart) / 1000;
  const late = Float64Array.from(lateMs.subarray(0, woken)).sort();
  const doneLate = Float64Array.from(doneLateMs.subarray(0, woken)).sort();
  const wakeSeconds = (lastWakeAt - firstWakeAt) / 1000;

  await pubsub.stop();
  await actors.stop();
  await store.close();

  const facts = machineFacts();
  const perExecution = (a: number, b: number) => fmt((a - b) / N);
  const rows: [string, string][] = [
    ['executions waiting at once', fmt(waiting)],
    ['start rate (executions/s, C in flight)', `${fmt(N / startSeconds)} (C = ${CONCURRENCY})`],
    ['DELAY', `${delaySeconds} s`],
    ['wake-ups', `${fmt(woken)} over ${wakeSeconds.toFixed(1)} s (${fmt(woken / Math.max(wakeSeconds, 0.001))}/s); ${fmt(completed)} COMPLETED`],
    ['wake-up lateness p50 / p90 / p99 / max (ms)', [0.5, 0.9, 0.99, 1].map((q) => fmt(percentile(late, q), 1)).join(' / ')],
    ['completion lateness p50 / p99 (ms)', [0.5, 0.99].map((q) => fmt(percentile(doneLate, q), 1)).join(' / ')],
    ['heap per waiting execution, idle (B)', perExecution(idle.heap, base.heap)],
    ['RSS per waiting execution, idle (B)', perExecution(idle.rss, base.rss)],
    ['heap per waiting execution, just started (B)', `${perExecution(hot.heap, base.heap)} (${fmt(activeHot)} actors still cached)`],
    ['process CPU (s) / machine busy (cores) over the run', `${cpu.toFixed(1)} / ${(busy / wall).toFixed(2)}`],
  ];
  const table = ['| metric | value |', '| --- | ---: |', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
  console.log(`\n${table}\n`);
  const ok = woken === N && completed === N && waiting === N;
  if (!ok) console.error(`CHECK FAILED: waiting ${waiting}, woken ${woken}, completed ${completed} of ${N}`);

  if (!args['no-record']) {
    appendResults('workflows', 'Workflow executions benchmark results', {
      startedAt,
      facts,
      context: [
        `load average before: ${load0}`,
        ...(ok ? [] : [`**CHECK FAILED**: waiting ${waiting}, woken ${woken}, completed ${completed} of ${N}`]),
      ],
      note: args.note,
      body: [table],
    });
  }
  return ok ? 0 : 1;
}

await runMain(main);
