/**
 * The one-time import of the store of earlier versions: an append-only JSON-lines journal,
 * `DATA_DIR/store/store.journal`, one line per document version
 * (`{"c":"contacts","p":{...}}` a put, `{"c":"contacts","d":"<_id>"}` a delete), replayed in
 * order. The first start on SQLite copies the live documents into the database in one
 * transaction and records that it did; the journal files stay where they are, untouched.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Doc } from '../../ports/store.ts';
import type { Database } from './database.ts';

type JournalEntry = { c: string; p: Doc } | { c: string; d: string };

const READ_CHUNK = 8 * 1024 * 1024;
const NEWLINE = 0x0a;
const MARKER = 'journal-imported';

/**
 * Imports `dir/store.journal` once. Returns the number of journal lines applied, or undefined when
 * there is nothing to import (no journal, or imported before). `table` names (and creates) the
 * table of a collection.
 */
export function importJournal(db: Database, dir: string, table: (collection: string) => string): number | undefined {
  const file = path.join(dir, 'store.journal');
  db.sqlite.exec('CREATE TABLE IF NOT EXISTS _mailroom_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
  if (!fs.existsSync(file)) return undefined;
  if (db.sqlite.prepare('SELECT 1 FROM _mailroom_meta WHERE key = ?').get(MARKER)) return undefined;
  db.sqlite.exec('BEGIN IMMEDIATE');
  try {
    const { lines } = replay(file, (entry) => {
      const name = table(entry.c);
      if ('p' in entry) {
        db.statement(`INSERT INTO ${name} (id, doc) VALUES (?, jsonb(?)) ON CONFLICT (id) DO UPDATE SET doc = excluded.doc`).run(entry.p._id, JSON.stringify(entry.p));
      } else {
        db.statement(`DELETE FROM ${name} WHERE id = ?`).run(entry.d);
      }
    });
    db.sqlite.prepare('INSERT INTO _mailroom_meta (key, value) VALUES (?, ?)').run(MARKER, JSON.stringify({ file, lines, at: new Date().toISOString() }));
    db.sqlite.exec('COMMIT');
    return lines;
  } catch (err) {
    db.sqlite.exec('ROLLBACK');
    throw err;
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
