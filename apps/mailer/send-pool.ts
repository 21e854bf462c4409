import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { Config } from '../../runtime/config.ts';
import { typescriptArgs } from '../../runtime/node-typescript.ts';
import type { RenderTask } from './render.ts';

/** What a sending thread starts from (piscina's workerData). */
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
  | { ok: false; stage: 'smtp'; committed: boolean; error: SmtpErrorFields };

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

/**
 * Renders, signs and sends emails on worker threads (compose, MIME, DKIM and the SMTP client: two
 * thirds of an email's CPU on the event loop before), so the event loop keeps to the store and a
 * campaign uses every core. One thread fewer than cores (and no more than SMTP_CONNECTIONS, each
 * thread holding a share of them): the event loop has work of its own, and
 * each thread holds its own heap, copies of juice and html-to-text, and its own SMTP pool. The RSA
 * signatures run on libuv's thread pool. Started on first use: a mailer that sends nothing starts
 * no thread, and idle threads do not keep the process alive.
 */
export function sendPool(config: Pick<Config, 'smtpUrl' | 'dataDir' | 'smtpConnections'>, onCommitted: (emailId: string) => void): SendPool {
  const slots = new Int32Array(new SharedArrayBuffer(SLOTS * Int32Array.BYTES_PER_ELEMENT));
  const threads = Math.max(1, Math.min(availableParallelism() - 1, config.smtpConnections));
  // SMTP_CONNECTIONS is the whole mailer's: the threads' shares never add up to more.
  const connections = Math.floor(config.smtpConnections / threads);
  let pool: Piscina<RenderTask, SendOutcome> | undefined;
  const start = () => {
    const started = new Piscina<RenderTask, SendOutcome>({
      filename: new URL('./send-thread.ts', import.meta.url).href,
      workerData: { smtpUrl: config.smtpUrl, dataDir: config.dataDir, connections, slots } satisfies SendThreadData,
      // Our TypeScript preload only (Node's own stripping, or tsx where Node has none); no inherited
      // profiler flags.
      execArgv: typescriptArgs,
      minThreads: 0,
      maxThreads: threads,
      idleTimeout: 30_000,
      // A task waits on its signature (libuv's thread pool) and on SMTP round trips: meanwhile the
      // thread renders others. Four per connection of the SMTP pool (transport.ts), so each has the
      // next messages ready when it is free (8 tasks on 5 connections left the CPU a sixth idle).
      // Two left both threads part idle: in pairs each way (campaign-profile.md, session 23), 3
      // sent 5.6% more emails/s relay-signed (40k) and 1.9% signed (20k), 4 some 2% more again
      // each, 6 no more than 4.
      concurrentTasksPerWorker: 4 * connections,
      // Atomics.wait would hold the thread's event loop between tasks, and with it the callbacks.
      atomics: 'disabled',
      // Rendering makes much short-lived garbage; a scavenge costs what survives it (the messages
      // in flight), so fewer, larger ones cost less: the thread's GC pauses took 11 µs an email at
      // 32 MB against 28–33 at 8 (relay-signed, 40k), for ~25 MB more RSS (campaign-profile.md,
      // session 20).
      resourceLimits: { maxYoungGenerationSizeMb: 32 },
    });
    // A thread gone frees its slot (its log closes with it: Node closes a thread's files).
    started.on('workerDestroy', () => {
      const live = new Set(started.threads.map((thread) => thread.threadId));
      for (let slot = 0; slot < SLOTS; slot++) {
        const holder = Atomics.load(slots, slot);
        if (holder !== 0 && !live.has(holder)) Atomics.compareExchange(slots, slot, holder, 0);
      }
    });
    return started;
  };
  return {
    async send(task) {
      pool ??= start();
      let outcome: SendOutcome;
      try {
        outcome = await pool.run(task);
      } catch (err) {
        throw new SendThreadLost(`the sending thread stopped: ${(err as Error).message}`);
      }
      // Heard even when the caller stopped waiting (the circuit breaker's timeout): a later try
      // of the email then knows the server has it.
      if (outcome.ok ? outcome.committed : outcome.stage === 'smtp' && outcome.committed) onCommitted(task.email._id);
      if (outcome.ok) return outcome;
      if (outcome.stage === 'render') throw new RenderError(outcome.error.message);
      throw new SmtpError(outcome.error);
    },
    async close() {
      const closing = pool;
      pool = undefined;
      await closing?.destroy();
    },
  };
}
