/**
 * The SQLite database under the embedded store: one file (plus its WAL) opened through Node's
 * built-in `node:sqlite`, and group commit.
 *
 * Writes: every write runs synchronously inside the open transaction (a savepoint each, or one
 * statement, so one that throws undoes only itself) and its promise resolves once the transaction is committed and
 * on disk. The transaction is committed at the end of the event-loop turn, or 3 ms after the last
 * commit began if that is later (COMMIT_GAP_MS), so the writes of every request handled meanwhile
 * share one commit and one fsync; while the last group's fsync runs, the open transaction keeps
 * growing and is committed when it ends (the disk sets the pace, not the loop).
 *
 * Units: an actor turn runs as a unit (`unit()`). Its writes resolve at once and the unit resolves
 * once they are durable; no commit happens while a unit is open, so a turn's state, projections
 * and published messages (the pub/sub queue is a table here) are committed together or not at all.
 * When a commit is due while units are open, new units wait at a gate until the open ones finish
 * (a turn called from inside a unit is part of it and does not wait); a unit still open after
 * `maxUnitMs` is committed in parts and no longer waited for, so a long turn (one waiting on a
 * slow webhook) or two turns waiting on each other hold the others back that long, once.
 *
 * Durability: the WAL runs with `synchronous=NORMAL` (no fsync inside COMMIT, which would block
 * the event loop for every group) and the store fsyncs the WAL file itself on the thread pool
 * (fdatasync) before it resolves the group's promises. An acknowledged write is therefore on disk,
 * as with `synchronous=FULL`; a power loss can only lose groups nobody was told about. Checkpoints
 * (WAL into the database file) are SQLite's own, and fsync the database file under NORMAL.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AsyncLocalStorage } from 'node:async_hooks';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { DEFAULT_CACHE_MB } from './cache-size.ts';

export interface DatabaseOptions {
  /** SQLite page cache in MiB (default DEFAULT_CACHE_MB): the bound on what the store keeps in memory. */
  cacheMb?: number;
  /** How long a due commit waits for open units before it commits anyway (default 100 ms). */
  maxUnitMs?: number;
}

/** What a unit knows of itself while it runs. */
interface UnitState {
  /** The transaction of its last write, if it wrote. */
  wroteIn?: number;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

/**
 * Pages in the WAL before a commit copies them into the database file (SQLite's default is 1,000).
 * A checkpoint runs inside a commit, on the event loop, and copies each page once however often
 * it was written since the last: at 1,000 pages, checkpoints were 13% of the CPU of a tracked
 * event and a third of the time spent committing; at 16,000 (a WAL of up to 64 MB at 4 KiB pages)
 * the commits took half as long (bench:track profile, a track-path loop over a bench database).
 */
const WAL_CHECKPOINT_PAGES = 16_000;

/**
 * The least time between the starts of two commits. A commit writes every page its transaction
 * touched, so commits every few hundred microseconds wrote the same index and queue pages over and
 * over: at 3 ms, a campaign sent 13% more emails a second (701 → 792/s, 20,000 recipients) and
 * /v1/track answered 7% more requests (3,369 → 3,601/s) with a lower p50; at 6 ms the CPU per
 * email fell further but the campaign waited on its commits (791/s), at 12 ms it sent 507/s.
 * A write after a quiet moment is committed at once.
 */
const COMMIT_GAP_MS = 3;

export class Database {
  readonly sqlite: DatabaseSync;
  readonly file: string;
  readonly #statements = new Map<string, StatementSync>();
  /** A write's savepoint, prepared once (exec parsed it on every write). */
  readonly #savepoint: StatementSync;
  readonly #release: StatementSync;
  #inTransaction = false;
  /** Writes of the open transaction, resolved when it is durable. */
  #waiters: Waiter[] = [];
  #commitScheduled = false;
  /** A commit came due while the last one's fsync ran: it is made when that fsync ends. */
  #commitAfterSync = false;
  #walFd: number | undefined;
  readonly #units = new AsyncLocalStorage<UnitState>();
  readonly #maxUnitMs: number;
  /** Units a due commit waits for (top-level ones; nested turns are part of their caller's). */
  readonly #open = new Set<UnitState>();
  /** A commit is due and waits for the open units; new units wait at the gate meanwhile. */
  #draining: { gate: Promise<void>; open: () => void; timer: NodeJS.Timeout } | undefined;
  /** Numbers transactions: the open one, or the next. */
  #transaction = 0;
  /** Committed transactions whose fsync is under way, and its promise. */
  readonly #durable = new Map<number, Promise<void>>();
  #closed = false;
  /** When the last commit started (performance.now()). */
  #lastCommit = 0;
  readonly #rollbackListeners: (() => void)[] = [];

  constructor(file: string, options: DatabaseOptions = {}) {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    this.file = file;
    this.sqlite = new DatabaseSync(file);
    this.#maxUnitMs = options.maxUnitMs ?? 100;
    const cacheKib = Math.max(1, Math.round((options.cacheMb ?? DEFAULT_CACHE_MB) * 1024));
    this.sqlite.exec(`
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = NORMAL;
      PRAGMA cache_size = -${cacheKib};
      PRAGMA temp_store = FILE;
      PRAGMA busy_timeout = 5000;
      PRAGMA wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES};
    `);
    // Memory-mapped reads would count the whole file as resident once read: keep them off.
    this.sqlite.exec('PRAGMA mmap_size = 0');
    this.#savepoint = this.sqlite.prepare('SAVEPOINT write');
    this.#release = this.sqlite.prepare('RELEASE write');
    fs.chmodSync(file, 0o600);
  }

  /** Called after a commit failed and its transaction was rolled back. */
  onRollback(listener: () => void): void {
    this.#rollbackListeners.push(listener);
  }

  /** A prepared statement, cached by its text (statements are built from a few shapes). */
  statement(sql: string): StatementSync {
    this.assertOpen();
    let statement = this.#statements.get(sql);
    if (!statement) {
      if (this.#statements.size >= 2000) this.#statements.clear();
      statement = this.sqlite.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Runs `work` now, inside the open transaction, and resolves with its result once the
   * transaction is durable. A `work` that throws changes nothing and rejects at once.
   *
   * `savepoint: false` where `work` cannot throw once it changed something: one statement (SQLite
   * undoes a failed statement itself), or statements none of which can fail after another
   * succeeded. A savepoint copies every page it changes into the sub-journal, a temporary file
   * once it outgrew 64 KiB (one batch of inserts is enough): those copies were 6.5% of a
   * campaign's event loop, in write syscalls (bench/results/campaign-profile.md, session 11).
   */
  write<T>(work: () => T, { savepoint = true }: { savepoint?: boolean } = {}): Promise<T> {
    if (this.#closed) return Promise.reject(closedError());
    if (!this.#inTransaction) {
      this.sqlite.exec('BEGIN IMMEDIATE');
      this.#inTransaction = true;
    }
    let result: T;
    if (savepoint) this.#savepoint.run();
    try {
      result = work();
      if (savepoint) this.#release.run();
    } catch (err) {
      if (savepoint) {
        this.sqlite.exec('ROLLBACK TO write');
        this.#release.run();
      }
      this.#scheduleCommit();
      return Promise.reject(err);
    }
    this.#scheduleCommit();
    const unit = this.#units.getStore();
    if (unit) {
      // Durable when the unit ends (unit() waits for it): waiting here would wait for itself.
      unit.wroteIn = this.#transaction;
      return Promise.resolve(result!);
    }
    return new Promise<T>((resolve, reject) => this.#waiters.push({ resolve: () => resolve(result), reject }));
  }

  /**
   * Runs `turn` as a unit (see the top of this file) and resolves with its result once every write
   * it made is durable. A unit inside a unit is part of the outer one.
   */
  async unit<T>(turn: () => Promise<T>): Promise<T> {
    if (this.#units.getStore()) return turn();
    while (this.#draining) await this.#draining.gate;
    const state: UnitState = {};
    this.#open.add(state);
    let result: T;
    try {
      result = await this.#units.run(state, turn);
    } finally {
      if (this.#open.delete(state) && this.#open.size === 0 && this.#draining) this.#commit();
    }
    if (state.wroteIn !== undefined) await this.#whenDurable(state.wroteIn);
    return result;
  }

  /**
   * Whether other connections (scan workers) see everything this one has written: true, or the
   * promise of the open transaction's commit; false inside a unit, whose writes and its caller's
   * are committed only when it ends (waiting for that would wait for itself).
   */
  committedForReaders(): boolean | Promise<void> {
    if (this.#units.getStore()) return false;
    return this.#inTransaction ? this.#whenDurable(this.#transaction) : true;
  }

  /** Resolves once transaction `n` is committed and on disk. */
  #whenDurable(n: number): Promise<void> {
    if (n === this.#transaction && this.#inTransaction) {
      return new Promise<void>((resolve, reject) => this.#waiters.push({ resolve, reject }));
    }
    return this.#durable.get(n) ?? Promise.resolve();
  }

  /**
   * Commits what is open (durably), waits for the fsyncs still running, and closes the database.
   * Writes after this call are refused.
   */
  async close(): Promise<void> {
    this.assertOpen();
    if (this.#inTransaction) this.#commit(true);
    this.#closed = true;
    await Promise.allSettled(this.#durable.values());
    this.#statements.clear();
    this.sqlite.close();
    if (this.#walFd !== undefined) fs.closeSync(this.#walFd);
    this.#walFd = undefined;
  }

  assertOpen(): void {
    if (this.#closed) throw closedError();
  }

  #scheduleCommit(): void {
    if (this.#commitScheduled || this.#draining) return;
    this.#commitScheduled = true;
    const wait = this.#lastCommit + COMMIT_GAP_MS - performance.now();
    const due = (commit: () => void) => (wait > 0 ? setTimeout(commit, wait) : setImmediate(commit));
    due(() => {
      this.#commitScheduled = false;
      if (!this.#inTransaction || this.#draining) return;
      if (this.#durable.size > 0) {
        // The disk is busy with the last group: this one grows meanwhile and shares the next fsync.
        this.#commitAfterSync = true;
        return;
      }
      if (this.#open.size === 0) {
        this.#commit();
        return;
      }
      // Units are open: let them finish (new ones wait), then commit; or commit anyway in time.
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const timer = setTimeout(() => {
        // Units still open are too slow to wait for: from here on they are committed in parts.
        this.#open.clear();
        this.#commit();
      }, this.#maxUnitMs);
      this.#draining = { gate, open, timer };
    });
  }

  #commit(wait = false): void {
    const draining = this.#draining;
    this.#draining = undefined;
    if (draining) {
      clearTimeout(draining.timer);
      draining.open();
    }
    if (!this.#inTransaction) return;
    const waiters = this.#waiters;
    this.#waiters = [];
    this.#inTransaction = false;
    const transaction = this.#transaction++;
    this.#lastCommit = performance.now();
    try {
      this.sqlite.exec('COMMIT');
    } catch (err) {
      try {
        this.sqlite.exec('ROLLBACK');
      } catch {
        // Already rolled back by SQLite.
      }
      for (const listener of this.#rollbackListeners) listener();
      for (const waiter of waiters) waiter.reject(err);
      return;
    }
    const answer = (err: unknown) => {
      for (const waiter of waiters) {
        if (err) waiter.reject(err);
        else waiter.resolve();
      }
    };
    if (wait) {
      fs.fdatasyncSync(this.#wal());
      answer(null);
      return;
    }
    // The commit is in the WAL, not yet on disk: fsync it off the event loop, then answer.
    const durable = new Promise<void>((resolve, reject) =>
      fs.fdatasync(this.#wal(), (err) => {
        this.#durable.delete(transaction);
        answer(err);
        if (this.#commitAfterSync && !this.#closed) {
          this.#commitAfterSync = false;
          this.#scheduleCommit();
        }
        if (err) reject(err);
        else resolve();
      }),
    );
    durable.catch(() => undefined); // its waiters have the error
    this.#durable.set(transaction, durable);
  }

  /** The WAL file, opened once: SQLite keeps it (and reuses it) while its connection is open. */
  #wal(): number {
    this.#walFd ??= fs.openSync(`${this.file}-wal`, 'r');
    return this.#walFd;
  }
}

const closedError = () => new Error('the store is closed');
