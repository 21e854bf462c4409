import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync } from 'node:fs';
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
 */
export class CommitLog {
  readonly #current: string;
  readonly #previous: string;
  readonly #committed = new Set<string>();

  constructor(dataDir: string) {
    const dir = join(dataDir, 'mailer');
    mkdirSync(dir, { recursive: true });
    this.#current = join(dir, 'commits.log');
    this.#previous = join(dir, 'commits.previous.log');
    for (const file of [this.#previous, this.#current]) {
      if (!existsSync(file)) continue;
      for (const line of readFileSync(file, 'utf8').split('\n')) {
        if (line.startsWith('-')) this.#committed.delete(line.slice(1));
        else if (line) this.#committed.add(line);
      }
    }
  }

  has(emailId: string): boolean {
    return this.#committed.has(emailId);
  }

  /** Durable against a crash of this process when it returns (no fsync: not against power loss). */
  commit(emailId: string): void {
    this.#append(emailId);
    this.#committed.add(emailId);
  }

  /** A failure the mailer lived to see: the server did not take the message after all. */
  forget(emailId: string): void {
    if (!this.#committed.delete(emailId)) return;
    this.#append(`-${emailId}`);
  }

  #append(line: string): void {
    if (existsSync(this.#current) && statSync(this.#current).size > MAX_BYTES) renameSync(this.#current, this.#previous);
    appendFileSync(this.#current, `${line}\n`);
  }
}
