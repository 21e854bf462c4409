import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { Config } from '../../runtime/config.ts';
import { typescriptArgs } from '../../runtime/node-typescript.ts';
import type { RenderTask } from './render.ts';

/** What a sending thread starts from (its workerData). */
export interface SendThreadData {
  smtpUrl: string | undefined;
  dataDir: string;
  /** This thread's share of the mailer's SMTP connections. */
  connections: number;
  /** Commit log slots: 0 free, else the thread id holding it (send-thread.ts). */
  slots: Int32Array;
}

/** A send's result as it crosses back from the thread: plain data (an Error would lose its SMTP fields). */
export type SendOutcome =
  | { ok: true; committed: boolean; messageId: string; response: string; envelope: { from: string; to: string[] }; subject: string; kept?: string; text?: string }
  | { ok: false; stage: 'render'; error: { message: string } }
  | { ok: false; stage: 'smtp'; committed: boolean; error: SmtpErrorFields }
  /** The send threw where it never should: what it did is in the thread's commit log only. */
  | { ok: false; stage: 'lost'; error: { message: string } };

interface SmtpErrorFields {
  message: string;
  responseCode?: number;
  command?: string;
  response?: string;
}

export type Sent = Extract<SendOutcome, { ok: true }>;

/** The SMTP transaction failed: nodemailer's error fields, which smtp-answers.ts reads. */
export class SmtpError extends Error {
  readonly responseCode?: number;
  readonly command?: string;
  readonly response?: string;
  constructor({ message, ...fields }: SmtpErrorFields) {
    super(message);
    Object.assign(this, fields);
  }
}

/** The email could not be rendered: a fault of ours, not the relay's (the circuit breaker leaves it out). */
export class RenderError extends Error {}

/** A sending thread stopped in the middle of a send: what it did is in its commit log only. */
export class SendThreadLost extends Error {}

export interface SendPool {
  /** Resolves once the relay took the message; rejects with SmtpError, RenderError or SendThreadLost. */
  send(task: RenderTask): Promise<Sent>;
  close(): Promise<void>;
}

/** More slots than threads ever run at once: a slot is freed only once its thread is gone. */
const SLOTS = 64;

/** An idle thread stops after this long: its heap, its copies of juice and its SMTP pool go with it. */
const IDLE_MS = 30_000;

/** Tasks as they go to a thread, and their outcomes as they come back: many to a message (see below). */
export interface ToThread {
  tasks: { id: number; task: RenderTask }[];
}
export interface FromThread {
  done: { id: number; outcome: SendOutcome }[];
}

interface Pending {
  task: RenderTask;
  resolve(outcome: SendOutcome): void;
  reject(err: Error): void;
}

/** One sending thread: its worker once started, the tasks it holds, and those to post next. */
interface Thread {
  worker: Worker | undefined;
  held: Map<number, Pending>;
  outbox: ToThread['tasks'];
  idle: NodeJS.Timeout | undefined;
}

/**
 * Renders, signs and sends emails on worker threads (compose, MIME, DKIM and the SMTP client: two
 * thirds of an email's CPU on the event loop before), so the event loop keeps to the store and a
 * campaign uses every core. One thread fewer than cores (and no more than SMTP_CONNECTIONS, each
 * thread holding a share of them): the event loop has work of its own, and each thread holds its
 * own heap, copies of juice and html-to-text, and its own SMTP pool. The RSA signatures run on
 * libuv's thread pool. Started on first use: a mailer that sends nothing starts no thread, and
 * idle threads do not keep the process alive.
 *
 * Our own and not a pool library (piscina, before session 27): a task went to its thread in a
 * message of its own, and its answer came back in one, each a structured clone with the link key
 * (a KeyObject) and the campaign's body in it. Here the tasks of one event-loop turn go in one
 * message (a clone copies an object it meets twice once: the body and the keys), and a thread's
 * answers of one turn come back in one. A message cost some 15 µs of CPU alone, 20 tasks to one
 * ~3 µs a task (bench/results/campaign-profile.md, session 27).
 */
export function sendPool(config: Pick<Config, 'smtpUrl' | 'dataDir' | 'smtpConnections'>, onCommitted: (emailId: string) => void): SendPool {
  const slots = new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
  const count = Math.max(1, Math.min(availableParallelism() - 1, config.smtpConnections));
  // SMTP_CONNECTIONS is the whole mailer's: the threads' shares never add up to more.
  const connections = Math.floor(config.smtpConnections / count);
  // A task waits on its signature (libuv's thread pool) and on SMTP round trips: meanwhile the
  // thread renders others. Four per connection of the SMTP pool (transport.ts), so each has the
  // next messages ready when it is free (8 tasks on 5 connections left the CPU a sixth idle). Two
  // left both threads part idle: in pairs each way (campaign-profile.md, session 23), 3 sent 5.6%
  // more emails/s relay-signed (40k) and 1.9% signed (20k), 4 some 2% more again each, 6 no more
  // than 4. Tasks beyond that wait here, in order.
  const perThread = 4 * connections;
  const threads: Thread[] = Array.from({ length: count }, () => ({ worker: undefined, held: new Map(), outbox: [], idle: undefined }));
  const waiting: Pending[] = [];
  let nextId = 0;
  let closed = false;
  const closedError = () => new SendThreadLost('the sending threads are closed');

  const start = (thread: Thread): Worker => {
    const worker = new Worker(new URL('./send-thread.ts', import.meta.url), {
      workerData: { smtpUrl: config.smtpUrl, dataDir: config.dataDir, connections, slots } satisfies SendThreadData,
      // Our TypeScript preload only (Node's own stripping, or tsx where Node has none); no inherited
      // profiler flags.
      execArgv: typescriptArgs,
      // Rendering makes much short-lived garbage; a scavenge costs what survives it (the messages
      // in flight), so fewer, larger ones cost less: the thread's GC pauses took 11 µs an email at
      // 32 MB against 28–33 at 8 (relay-signed, 40k), for ~25 MB more RSS (campaign-profile.md,
      // session 20).
      resourceLimits: { maxYoungGenerationSizeMb: 32 },
    });
    worker.on('message', ({ done }: FromThread) => {
      for (const { id, outcome } of done) {
        const pending = thread.held.get(id);
        thread.held.delete(id);
        pending?.resolve(outcome);
      }
      pump();
      if (thread.held.size === 0) rest(thread);
    });
    const { threadId } = worker;
    // A thread that fails or stops fails what it held; the next task starts a new one.
    const lost = (reason: string) => {
      // Its log closes with it (Node closes a thread's files): its slot is free again.
      for (let slot = 0; slot < SLOTS; slot++) Atomics.compareExchange(slots, slot, threadId, 0);
      if (thread.worker !== worker) return; // retired while idle (rest)
      thread.worker = undefined;
      clearTimeout(thread.idle);
      const held = [...thread.held.values()];
      thread.held.clear();
      thread.outbox = [];
      for (const pending of held) pending.reject(new SendThreadLost(`the sending thread stopped: ${reason}`));
      if (!closed) pump();
    };
    worker.on('error', (err) => lost(err instanceof Error ? err.message : String(err)));
    worker.on('exit', (code) => lost(`exit code ${code}`));
    return worker;
  };

  /** An idle thread lets the process exit, and stops after IDLE_MS. */
  const rest = (thread: Thread) => {
    thread.worker?.unref();
    clearTimeout(thread.idle);
    thread.idle = setTimeout(() => {
      const worker = thread.worker;
      thread.worker = undefined; // the next task starts a new thread, not this stopping one
      void worker?.terminate();
    }, IDLE_MS).unref();
  };

  /** Hands waiting tasks to the threads with room, the least busy first; posted after this turn. */
  const pump = () => {
    while (waiting.length > 0 && !closed) {
      let thread: Thread | undefined;
      for (const one of threads) if (one.held.size < perThread && (!thread || one.held.size < thread.held.size)) thread = one;
      if (!thread) return;
      const pending = waiting.shift()!;
      const id = nextId++;
      thread.worker ??= start(thread);
      thread.worker.ref(); // answers are awaited: keep the process up for them
      clearTimeout(thread.idle);
      thread.held.set(id, pending);
      if (thread.outbox.push({ id, task: pending.task }) === 1) setImmediate(post, thread);
    }
  };
  const post = (thread: Thread) => {
    const tasks = thread.outbox;
    thread.outbox = [];
    if (tasks.length > 0) thread.worker?.postMessage({ tasks } satisfies ToThread);
  };

  return {
    async send(task) {
      if (closed) throw closedError();
      const outcome = await new Promise<SendOutcome>((resolve, reject) => {
        waiting.push({ task, resolve, reject });
        pump();
      });
      // Heard even when the caller stopped waiting (the circuit breaker's timeout): a later try
      // of the email then knows the server has it.
      if (outcome.ok ? outcome.committed : outcome.stage === 'smtp' && outcome.committed) onCommitted(task.email._id);
      if (outcome.ok) return outcome;
      if (outcome.stage === 'render') throw new RenderError(outcome.error.message);
      if (outcome.stage === 'lost') throw new SendThreadLost(`the send failed on its thread: ${outcome.error.message}`);
      throw new SmtpError(outcome.error);
    },
    async close() {
      closed = true;
      for (const pending of waiting.splice(0)) pending.reject(closedError());
      await Promise.all(threads.map((thread) => thread.worker?.terminate()));
    },
  };
}
