/**
 * The embedded store's persistence: one append-only JSON-lines file, `dir/store.journal`.
 *
 * Each line records the new state of one document:
 *   {"c":"contacts","p":{...the whole document...}}   a put (insert, update or replace)
 *   {"c":"contacts","d":"<_id>"}                      a delete
 * Replaying the lines in order rebuilds every collection. A snapshot written by compaction uses
 * the same format (one put per live document), so there is only one thing to parse.
 *
 * Durability: lines go to the kernel with a synchronous write(2) before the store's promise
 * resolves, so an acknowledged write survives the process being killed. There is deliberately no
 * fsync per write (it would cost milliseconds each), so a power loss or kernel crash can lose the
 * last writes; only compaction fsyncs, because it replaces the file.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Doc } from '../../ports/store.ts';

export type JournalEntry = { c: string; p: Doc } | { c: string; d: string };

const FILE_NAME = 'store.journal';
const READ_CHUNK = 8 * 1024 * 1024;
const WRITE_CHUNK = 1024 * 1024;
const NEWLINE = 0x0a;

/** The journal line for a put; `json` is the document already serialized (the caller has it). */
export function putLine(collection: string, json: string): string {
  return `{"c":${JSON.stringify(collection)},"p":${json}}\n`;
}

export function deleteLine(collection: string, id: string): string {
  return `{"c":${JSON.stringify(collection)},"d":${JSON.stringify(id)}}\n`;
}

export class Journal {
  readonly #file: string;
  #fd: number;
  /** Byte length of the valid journal, so a failed append can be cut back off. */
  #size: number;
  #lines: number;

  private constructor(file: string, fd: number, size: number, lines: number) {
    this.#file = file;
    this.#fd = fd;
    this.#size = size;
    this.#lines = lines;
  }

  /**
   * Opens (or creates) the journal in `dir`, handing every recorded entry to `apply` in order.
   * A torn last line, left by a crash in the middle of a write, is dropped and truncated away so
   * the next append starts on a clean line; a bad line anywhere else is corruption and throws.
   */
  static open(dir: string, apply: (entry: JournalEntry) => void): Journal {
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, FILE_NAME);
    // A leftover snapshot from a crash during compaction: the journal itself is still whole.
    fs.rmSync(`${file}.tmp`, { force: true });
    const { validBytes, lines } = replay(file, apply);
    if (fs.existsSync(file) && fs.statSync(file).size > validBytes) fs.truncateSync(file, validBytes);
    const fd = fs.openSync(file, 'a');
    return new Journal(file, fd, validBytes, lines);
  }

  get lines(): number {
    return this.#lines;
  }

  /** Appends complete lines (each ending in "\n") with one write; throws if it fails. */
  append(text: string, lineCount: number): void {
    if (text.length === 0) return;
    const bytes = Buffer.from(text, 'utf8');
    try {
      writeAll(this.#fd, bytes);
    } catch (err) {
      // Don't leave half a line behind for later appends to be glued onto.
      try {
        fs.ftruncateSync(this.#fd, this.#size);
      } catch {
        // Nothing more we can do; replay will treat a torn tail as unwritten.
      }
      throw err;
    }
    this.#size += bytes.length;
    this.#lines += lineCount;
  }

  /**
   * Replaces the journal with `lines` (a snapshot of the live documents): written to a temp file,
   * fsynced, then renamed over the journal, so a crash at any point leaves one whole version.
   */
  compact(lines: Iterable<string>): void {
    const tmp = `${this.#file}.tmp`;
    const fd = fs.openSync(tmp, 'w');
    let size = 0;
    let count = 0;
    try {
      let pending: string[] = [];
      let pendingLength = 0;
      const flush = () => {
        const bytes = Buffer.from(pending.join(''), 'utf8');
        writeAll(fd, bytes);
        size += bytes.length;
        pending = [];
        pendingLength = 0;
      };
      for (const line of lines) {
        pending.push(line);
        pendingLength += line.length;
        count++;
        if (pendingLength >= WRITE_CHUNK) flush();
      }
      flush();
      fs.fsyncSync(fd);
    } catch (err) {
      fs.closeSync(fd);
      fs.rmSync(tmp, { force: true });
      throw err;
    }
    fs.closeSync(fd);
    fs.renameSync(tmp, this.#file);
    syncDirectory(path.dirname(this.#file));
    fs.closeSync(this.#fd);
    this.#fd = fs.openSync(this.#file, 'a');
    this.#size = size;
    this.#lines = count;
  }

  close(): void {
    fs.closeSync(this.#fd);
  }
}

/** Reads the journal line by line in chunks (it may be far larger than a JS string may be). */
function replay(file: string, apply: (entry: JournalEntry) => void): { validBytes: number; lines: number } {
  if (!fs.existsSync(file)) return { validBytes: 0, lines: 0 };
  const fd = fs.openSync(file, 'r');
  let validBytes = 0; // end of the last good line
  let lines = 0;
  let badLineAt = -1; // start of an unparseable line: fine only if nothing good follows it
  try {
    let carry = Buffer.alloc(0);
    let carryStart = 0; // file offset of carry[0]
    const chunk = Buffer.alloc(READ_CHUNK);
    for (;;) {
      const read = fs.readSync(fd, chunk, 0, chunk.length, null);
      if (read === 0) break;
      const data = carry.length ? Buffer.concat([carry, chunk.subarray(0, read)]) : chunk.subarray(0, read);
      let start = 0;
      for (let nl = data.indexOf(NEWLINE); nl !== -1; nl = data.indexOf(NEWLINE, start)) {
        const text = data.toString('utf8', start, nl);
        const lineStart = carryStart + start;
        start = nl + 1;
        if (text.trim() === '') continue;
        const entry = parseEntry(text);
        if (!entry) {
          if (badLineAt === -1) badLineAt = lineStart;
          continue;
        }
        if (badLineAt !== -1) throw new Error(`corrupt journal ${file} at byte ${badLineAt}`);
        apply(entry);
        lines++;
        validBytes = carryStart + start;
      }
      // Copy the unterminated remainder: `chunk` is reused by the next read.
      carry = Buffer.from(data.subarray(start));
      carryStart += start;
    }
    // Whatever follows the last newline is a torn write and is dropped with the bad tail line.
  } finally {
    fs.closeSync(fd);
  }
  return { validBytes, lines };
}

function parseEntry(text: string): JournalEntry | undefined {
  try {
    const entry = JSON.parse(text) as Partial<{ c: unknown; p: unknown; d: unknown }>;
    if (typeof entry?.c !== 'string') return undefined;
    if (typeof entry.d === 'string') return { c: entry.c, d: entry.d };
    const doc = entry.p as Doc | undefined;
    if (doc && typeof doc === 'object' && typeof doc._id === 'string') return { c: entry.c, p: doc };
  } catch {
    // fall through: not a complete line
  }
  return undefined;
}

function writeAll(fd: number, bytes: Buffer): void {
  let offset = 0;
  while (offset < bytes.length) offset += fs.writeSync(fd, bytes, offset, bytes.length - offset);
}

/** Makes the rename itself durable (POSIX needs the directory fsynced). */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(dir, 'r');
    fs.fsyncSync(fd);
  } catch {
    // Some platforms cannot fsync a directory; the rename is still atomic.
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
