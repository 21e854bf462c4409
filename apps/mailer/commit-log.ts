import { randomUUID } from 'node:crypto';
import { closeSync, existsSync, fstatSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** After this much, the log starts afresh (the previous file is kept until the next switch). */
const MAX_BYTES = 16 * 1024 * 1024;

/**
 * The mailer's own record of emails whose whole message is on the socket with only the final
 * "." to follow. Written synchronously to a file under DATA_DIR, and the "." is written in the
 * same tick: a mailer killed after the record also got the "." out, so a restarted mailer that
 * finds the record knows the server has the message. (A database write would leave a window of
 * one round trip in which the record exists and the "." does not.) A redelivery finds it within
 * minutes, so two files, the current and the one before, are plenty.
 *
 * Each sending thread writes a log of its own (`name`: `commits-<slot>`, send-thread.ts), so
 * every log has one writer; `commits` is the one the mailer's event loop wrote before sending
 * moved to the threads, still read at start-up.
 */
export class CommitLog {
  readonly #current: string;
  readonly #previous: string;
  /** The ids each file holds: the memory kept is two files' worth, however long the mailer runs. */
  #currentIds = new Set<string>();
  #previousIds = new Set<string>();
  /** The current file, open for appending (once), and its size: one write per record, no stat. */
  #fd: number | undefined;
  #bytes = 0;
  readonly #maxBytes: number;
  /** A record of the current file a crash cut off (no line end), to be ended and taken back. */
  #torn: string;

  constructor(dataDir: string, options: { maxBytes?: number; name?: string } = {}) {
    this.#maxBytes = options.maxBytes ?? MAX_BYTES;
    const dir = join(dataDir, 'mailer');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const name = options.name ?? 'commits';
    this.#current = join(dir, `${name}.log`);
    this.#previous = join(dir, `${name}.previous.log`);
    readIds(this.#previous, this.#previousIds);
    this.#torn = readIds(this.#current, this.#currentIds, this.#previousIds);
  }

  /** Closes the file; a record after this opens it again. */
  close(): void {
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  has(emailId: string): boolean {
    return this.#currentIds.has(emailId) || this.#previousIds.has(emailId);
  }

  /** Durable against a crash of this process when it returns (no fsync: not against power loss). */
  commit(emailId: string): void {
    this.#append(emailId);
    this.#currentIds.add(emailId);
  }

  /** A failure the mailer lived to see: the server did not take the message after all. */
  forget(emailId: string): void {
    if (!this.has(emailId)) return;
    this.#currentIds.delete(emailId);
    this.#previousIds.delete(emailId);
    this.#append(`-${emailId}`);
  }

  #append(line: string): void {
    if (this.#fd === undefined) {
      this.#fd = openSync(this.#current, 'a', 0o600);
      this.#bytes = fstatSync(this.#fd).size;
      // A record a crash tore is ended and taken back first, so the next is not glued to it and
      // no reader ever counts it.
      if (this.#torn) this.#bytes += writeSync(this.#fd, `\n-${this.#torn}\n`);
      this.#torn = '';
    }
    if (this.#bytes > this.#maxBytes) {
      this.close();
      renameSync(this.#current, this.#previous);
      this.#fd = openSync(this.#current, 'a', 0o600);
      this.#bytes = 0;
      this.#previousIds = this.#currentIds;
      this.#currentIds = new Set();
    }
    this.#bytes += writeSync(this.#fd, `${line}\n`);
  }
}

/**
 * What the mailer's event loop knows of the commits its sending threads made: the logs on disk
 * as they were at start-up (or at the last `reload`), and the commits reported since. An email
 * finished since is dropped from the latter, so its memory is that of the logs.
 */
export class CommittedEmails {
  /**
   * Who claims emails with these logs (domain/mail/claims.ts): kept beside them, so a mailer started
   * again on them takes back its own claims at once, and one on new logs (a new pod) is another.
   */
  readonly holder: string;
  readonly #dataDir: string;
  #logs: CommitLog[] = [];
  readonly #reported = new Set<string>();

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
    this.holder = holderOf(join(dataDir, 'mailer'));
    this.reload();
  }

  has(emailId: string): boolean {
    return this.#reported.has(emailId) || this.#logs.some((log) => log.has(emailId));
  }

  /** A thread committed it (the server has the whole message, or had it when it answered). */
  reported(emailId: string): void {
    this.#reported.add(emailId);
  }

  /** Finished in the store: no message for it is claimed again. */
  finished(emailId: string): void {
    this.#reported.delete(emailId);
  }

  /** Reads the logs again: a thread died in the middle of a send and could not say what it did. */
  reload(): void {
    const dir = join(this.#dataDir, 'mailer');
    const names = existsSync(dir) ? readdirSync(dir).flatMap((file) => /^(commits(?:-\d+)?)(?:\.previous)?\.log$/.exec(file)?.[1] ?? []) : [];
    this.#logs = [...new Set(names)].map((name) => new CommitLog(this.#dataDir, { name }));
  }
}

/** The id in `dir`'s `holder` file, made whole (linked into place) on the first start. */
function holderOf(dir: string): string {
  const file = join(dir, 'holder');
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const made = `${file}.${process.pid}`;
    writeFileSync(made, randomUUID(), { mode: 0o600 });
    try {
      linkSync(made, file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      unlinkSync(made);
    }
  }
  return readFileSync(file, 'utf8');
}

/**
 * Adds the ids a file records as committed to `ids`; a `-id` line takes one back from `earlier`
 * too. A last line without its line end is a record a crash cut off: its "." was never sent.
 */
function readIds(file: string, ids: Set<string>, earlier?: Set<string>): string {
  if (!existsSync(file)) return '';
  const lines = readFileSync(file, 'utf8').split('\n');
  const torn = lines.pop()!; // after the last line end: nothing, or a torn record
  for (const line of lines) {
    if (line.startsWith('-')) {
      ids.delete(line.slice(1));
      earlier?.delete(line.slice(1));
    } else if (line) {
      ids.add(line);
    }
  }
  return torn;
}

