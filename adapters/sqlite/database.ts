/**
 * The SQLite database under the embedded store: one file (plus its WAL) opened through Node's
 * built-in `node:sqlite`, and group commit.
 *
 * Writes: every write runs synchronously inside the open transaction (a savepoint each, so one
 * that throws undoes only itself) and its promise resolves once the transaction is committed and
 * on disk. The transaction is committed once per event-loop turn, so the writes of every request
 * handled in that turn share one commit and one fsync.
 *
 * Durability: the WAL runs with `synchronous=NORMAL` (no fsync inside COMMIT, which would block
 * the event loop for every group) and the store fsyncs the WAL file itself on the thread pool
 * (fdatasync) before it resolves the group's promises. An acknowledged write is therefore on disk,
 * as with `synchronous=FULL`; a power loss can only lose groups nobody was told about. Checkpoints
 * (WAL into the database file) are SQLite's own, and fsync the database file under NORMAL.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';

export interface DatabaseOptions {
  /** SQLite page cache in MiB (default 64): the bound on what the store keeps in memory. */
  cacheMb?: number;
}

interface Waiter {
  resolve(): void;
  reject(err: unknown): void;
}

export class Database {
  readonly sqlite: DatabaseSync;
  readonly file: string;
  readonly #statements = new Map<string, StatementSync>();
  #inTransaction = false;
  /** Writes of the open transaction, resolved when it is durable. */
  #waiters: Waiter[] = [];
  #commitScheduled = false;
  #walFd: number | undefined;
  /** fsyncs under way (close waits for them: the WAL's descriptor must outlive them). */
  readonly #syncing = new Set<Promise<void>>();
  #closed = false;

  constructor(file: string, options: DatabaseOptions = {}) {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    this.file = file;
    this.sqlite = new DatabaseSync(file);
    const cacheKib = Math.max(1, Math.round((options.cacheMb ?? 64) * 1024));
    this.sqlite.exec(`
      PRAGMA journal_mode = WAL;
      PRAGMA synchronous = NORMAL;
      PRAGMA cache_size = -${cacheKib};
      PRAGMA temp_store = FILE;
      PRAGMA busy_timeout = 5000;
    `);
    // Memory-mapped reads would count the whole file as resident once read: keep them off.
    this.sqlite.exec('PRAGMA mmap_size = 0');
    fs.chmodSync(file, 0o600);
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
   */
  write<T>(work: () => T): Promise<T> {
    if (this.#closed) return Promise.reject(closedError());
    if (!this.#inTransaction) {
      this.sqlite.exec('BEGIN IMMEDIATE');
      this.#inTransaction = true;
    }
    let result: T;
    this.sqlite.exec('SAVEPOINT write');
    try {
      result = work();
      this.sqlite.exec('RELEASE write');
    } catch (err) {
      this.sqlite.exec('ROLLBACK TO write');
      this.sqlite.exec('RELEASE write');
      this.#scheduleCommit();
      return Promise.reject(err);
    }
    this.#scheduleCommit();
    return new Promise<T>((resolve, reject) => this.#waiters.push({ resolve: () => resolve(result), reject }));
  }

  /**
   * Commits what is open (durably), waits for the fsyncs still running, and closes the database.
   * Writes after this call are refused.
   */
  async close(): Promise<void> {
    this.assertOpen();
    if (this.#inTransaction) this.#commit(true);
    this.#closed = true;
    await Promise.all(this.#syncing);
    this.#statements.clear();
    this.sqlite.close();
    if (this.#walFd !== undefined) fs.closeSync(this.#walFd);
    this.#walFd = undefined;
  }

  assertOpen(): void {
    if (this.#closed) throw closedError();
  }

  #scheduleCommit(): void {
    if (this.#commitScheduled) return;
    this.#commitScheduled = true;
    setImmediate(() => {
      this.#commitScheduled = false;
      if (this.#inTransaction) this.#commit();
    });
  }

  #commit(wait = false): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    this.#inTransaction = false;
    try {
      this.sqlite.exec('COMMIT');
    } catch (err) {
      try {
        this.sqlite.exec('ROLLBACK');
      } catch {
        // Already rolled back by SQLite.
      }
      for (const waiter of waiters) waiter.reject(err);
      return;
    }
    if (waiters.length === 0) return;
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
    const syncing = new Promise<void>((done) =>
      fs.fdatasync(this.#wal(), (err) => {
        this.#syncing.delete(syncing);
        answer(err);
        done();
      }),
    );
    this.#syncing.add(syncing);
  }

  /** The WAL file, opened once: SQLite keeps it (and reuses it) while its connection is open. */
  #wal(): number {
    this.#walFd ??= fs.openSync(`${this.file}-wal`, 'r');
    return this.#walFd;
  }
}

const closedError = () => new Error('the store is closed');
