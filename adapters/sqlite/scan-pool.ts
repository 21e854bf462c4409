/**
 * Worker threads that run read-only statements on the database file (scan-worker.ts): a count
 * over a million contacts, split by rowid into one part per worker, takes every core instead of
 * holding the event loop for a second. Workers start on first use and do not keep the process
 * alive; they see what is committed, so the store hands them a scan only once its own writes are.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { SqlValue } from './filter-sql.ts';

interface Pending {
  resolve(row: unknown): void;
  reject(err: Error): void;
}

export class ScanPool {
  readonly #file: string;
  #workers: Worker[] | undefined;
  readonly #pending = new Map<number, Pending>();
  #next = 0;

  constructor(file: string) {
    this.#file = file;
  }

  /** How many parts a scan is split into: one per core, at most four. */
  get size(): number {
    return Math.max(1, Math.min(4, availableParallelism()));
  }

  /** Runs `sql` once per part, each with `params` and its part's params after them; their first rows. */
  all(sql: string, params: SqlValue[], parts: SqlValue[][]): Promise<unknown[]> {
    const workers = this.#start();
    return Promise.all(parts.map((part, i) => this.#ask(workers[i % workers.length], sql, [...params, ...part])));
  }

  async close(): Promise<void> {
    const workers = this.#workers ?? [];
    this.#workers = undefined;
    await Promise.all(workers.map((worker) => worker.terminate()));
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(new Error('the store is closed'));
  }

  #start(): Worker[] {
    if (this.#workers) return this.#workers;
    this.#workers = Array.from({ length: this.size }, () => {
      // No inherited preloads or profiler flags (Node's own type stripping loads the worker).
      const worker = new Worker(new URL('./scan-worker.ts', import.meta.url), { workerData: { file: this.#file }, execArgv: [] });
      worker.unref();
      worker.on('message', ({ id, row, error }: { id: number; row?: unknown; error?: string }) => {
        const pending = this.#pending.get(id);
        this.#pending.delete(id);
        if (this.#pending.size === 0) for (const w of this.#workers ?? []) w.unref();
        if (error === undefined) pending?.resolve(row);
        else pending?.reject(new Error(error));
      });
      // A worker that fails fails what it was asked; the next scan starts new workers.
      worker.on('error', (err: unknown) => this.#fail(worker, err instanceof Error ? err : new Error(String(err))));
      worker.on('exit', () => this.#fail(worker, new Error('a scan worker exited')));
      return worker;
    });
    return this.#workers;
  }

  #ask(worker: Worker, sql: string, params: SqlValue[]): Promise<unknown> {
    const id = this.#next++;
    worker.ref(); // an answer is awaited: keep the process up for it
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ id, sql, params });
    });
  }

  #fail(worker: Worker, err: Error): void {
    const workers = this.#workers;
    if (!workers?.includes(worker)) return; // one of a pool already closed
    this.#workers = undefined;
    for (const worker of workers ?? []) void worker.terminate();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(err);
  }
}
