import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { Rendered, RenderTask } from './render.ts';

export interface Renderer {
  render(task: RenderTask): Promise<Rendered>;
  close(): Promise<void>;
}

/**
 * Renders emails (compose, MIME, DKIM: a quarter of an email's CPU on the event loop before)
 * on worker threads, so the event loop keeps to the store and SMTP and a campaign uses every core.
 * One thread fewer than cores: the event loop has a core's worth of work of its own, and each
 * thread holds its own heap and copies of juice and html-to-text (some 100 MB). The RSA
 * signatures run on libuv's thread pool in any case. Started on first use: a mailer that sends
 * nothing starts no thread, and idle threads do not keep the process alive.
 */
export function renderPool(): Renderer {
  let pool: Piscina<RenderTask, Rendered> | undefined;
  return {
    async render(task) {
      pool ??= new Piscina({
        filename: new URL('./render-worker.ts', import.meta.url).href,
        // Node's own type stripping loads the worker; no inherited preloads or profiler flags.
        execArgv: [],
        minThreads: 0,
        maxThreads: Math.max(1, availableParallelism() - 1),
        idleTimeout: 30_000,
        // A task awaits its signature (on libuv's thread pool): meanwhile the thread composes the next.
        concurrentTasksPerWorker: 4,
        // Atomics.wait would hold the thread's event loop between tasks, and with it the signature callbacks.
        atomics: 'disabled',
        // Rendering makes much short-lived garbage: a small young generation keeps the thread's RSS
        // some 30 MB lower at no cost in speed (measured: 4,000 emails of the bench body).
        resourceLimits: { maxYoungGenerationSizeMb: 8 },
      });
      const out = await pool.run(task);
      // A Buffer comes back from a thread as a plain Uint8Array.
      return { ...out, raw: Buffer.from(out.raw.buffer, out.raw.byteOffset, out.raw.byteLength) };
    },
    async close() {
      const closing = pool;
      pool = undefined;
      await closing?.destroy();
    },
  };
}
