import { parse } from 'csv-parse';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { z } from 'zod';
import { contactDataSchema, emailSchema, MANAGED_KEYS, type ContactData } from '../contacts/schema.ts';
import { AppError, invalid } from '../errors.ts';
import { LIMITS } from '../limits.ts';
import type { ImportRow } from './collection.ts';

/** Columns an export of ours carries that an import must not write. */
const IGNORED_COLUMNS = new Set(['id', 'createdat', 'updatedat']);

const BOOLEAN: Record<string, boolean> = { true: true, false: false, yes: true, no: false, '1': true, '0': false };

/**
 * How much of the file the parser reads before giving the event loop back: a 5 MB file read in
 * one go held every other request for most of a second.
 */
const SLICE_BYTES = 16 * 1024;

/**
 * The header and first row must end within this many bytes for the request to check them. No
 * valid header comes near it (250 data keys of 100 characters are 25 KB).
 */
export const HEAD_BYTES = 64 * 1024;

/**
 * CSV cells are text; a cell that is unambiguously a boolean or a number becomes one. Numbers
 * with leading zeros (zip codes, phone numbers) stay strings.
 */
function typed(cell: string): string | number | boolean {
  const lower = cell.toLowerCase();
  if (lower === 'true' || lower === 'false') return lower === 'true';
  if (/^-?(0|[1-9]\d{0,14})(\.\d+)?$/.test(cell)) return Number(cell);
  return cell;
}

/**
 * Checks what the request can check cheaply, from the first 64 KiB at most: the file is not empty,
 * its header has an `email` column and only columns that can be data keys, and a row follows. The
 * rows themselves are read by the job (`readContactsCsv`), off the request path.
 */
export async function checkCsvHead(file: Buffer): Promise<void> {
  const head: string[][] = [];
  const whole = file.length <= HEAD_BYTES;
  for await (const { cells } of csvRecords(file, HEAD_BYTES)) {
    head.push(cells);
    if (head.length === 2) break;
  }
  if (head.length === 0) {
    if (whole) throw invalid('file', 'The file is empty', 'empty_csv');
    throw invalid('file', `The CSV header must end within the first ${HEAD_BYTES / 1024} KiB of the file`, 'header_too_long');
  }
  columnsOf(head[0]);
  if (head.length === 1 && whole) throw noRows();
}

/**
 * Reads an import file, giving the event loop back as it goes: the header must have an `email`
 * column; the other columns become data. A file-level problem throws (the import fails);
 * row-level problems are reported per row, by the line of the file they are on.
 */
export async function readContactsCsv(file: Buffer): Promise<{ rows: ImportRow[]; rejected: { row: number; message: string }[] }> {
  let columns: Columns | undefined;
  const rows: ImportRow[] = [];
  const rejected: { row: number; message: string }[] = [];
  for await (const { cells, line } of csvRecords(file)) {
    if (!columns) {
      columns = columnsOf(cells);
      continue;
    }
    if (rows.length + rejected.length === LIMITS.csvRows) {
      throw invalid('file', `The CSV has more than ${LIMITS.csvRows} rows; at most ${LIMITS.csvRows} per import (split the file)`, 'too_many_rows');
    }
    const row = rowOf(columns, cells, line);
    if ('message' in row) rejected.push(row);
    else rows.push(row);
  }
  if (!columns) throw invalid('file', 'The file is empty', 'empty_csv');
  if (rows.length + rejected.length === 0) throw noRows();
  return { rows, rejected };
}

const noRows = () => invalid('file', 'The CSV has a header but no rows', 'empty_csv');

interface Columns {
  emailAt: number;
  subscribedAt: number;
  data: { name: string; index: number }[];
}

/** Where the header puts the email, the subscription and the data fields; a header that cannot be imported throws. */
function columnsOf(header: string[]): Columns {
  const names = header.map((h) => h.trim());
  const emailAt = names.findIndex((h) => h.toLowerCase() === 'email');
  if (emailAt < 0) throw invalid('file', 'The CSV header has no "email" column', 'missing_email_column');
  const subscribedAt = names.findIndex((h) => h.toLowerCase() === 'subscribed');
  const data = names
    .map((name, index) => ({ name, index }))
    .filter(({ name, index }) => index !== emailAt && index !== subscribedAt && name !== '' && !IGNORED_COLUMNS.has(name.toLowerCase()));
  const badColumns = data.filter(({ name }) => (MANAGED_KEYS as readonly string[]).includes(name));
  const keyCheck = contactDataSchema.safeParse(Object.fromEntries(data.map(({ name }) => [name, ''])));
  if (badColumns.length > 0 || !keyCheck.success) {
    throw new AppError('VALIDATION_ERROR', 'The CSV header has columns that cannot be data fields', {
      fieldErrors: keyCheck.success ? [] : keyCheck.error.issues.map((i) => ({ field: `file.${i.path.join('.')}`, message: i.message, code: 'invalid_column' })),
    });
  }
  return { emailAt, subscribedAt, data };
}

/** One row of the file: what it imports, or why it cannot be imported. */
function rowOf({ emailAt, subscribedAt, data: dataColumns }: Columns, cells: string[], row: number): ImportRow | { row: number; message: string } {
  const email = emailSchema.safeParse(cells[emailAt] ?? '');
  if (!email.success) return { row, message: `Invalid email address "${cells[emailAt] ?? ''}"` };
  const data: ContactData = {};
  for (const { name, index } of dataColumns) {
    const cell = cells[index];
    if (cell !== undefined && cell !== '') data[name] = typed(cell);
  }
  const checked = contactDataSchema.safeParse(data);
  if (!checked.success) return { row, message: z.prettifyError(checked.error) };
  const subscribedCell = subscribedAt >= 0 ? (cells[subscribedAt] ?? '').toLowerCase() : '';
  if (subscribedCell !== '' && !(subscribedCell in BOOLEAN)) {
    return { row, message: `subscribed must be true or false, got "${cells[subscribedAt]}"` };
  }
  return { row, email: email.data, data: checked.data, ...(subscribedCell !== '' ? { subscribed: BOOLEAN[subscribedCell] } : {}) };
}

/**
 * The records of the file's first `upTo` bytes (all of it by default), each with the line it
 * starts on, parsed a slice at a time with a turn of the event loop between slices. A record cut
 * off at `upTo` is not given; a stop early (break) ends the parser.
 */
async function* csvRecords(file: Buffer, upTo = file.length): AsyncGenerator<{ cells: string[]; line: number }> {
  const parser = parse({ bom: true, skip_empty_lines: true, relax_column_count: true, trim: true, info: true });
  const lineOf = lineCounter(file);
  const ready: { cells: string[]; line: number }[] = [];
  let failure: Error | undefined;
  // With `info`, each record comes as {record, info}; the typings don't model that option.
  parser.on('data', ({ record, info }: { record: string[]; info: { bytes: number } }) => ready.push({ cells: record, line: lineOf(info.bytes) }));
  parser.on('error', (err) => (failure = err));
  const ended = new Promise<void>((resolve) => parser.once('end', resolve).once('error', () => resolve()));
  const end = Math.min(upTo, file.length);
  try {
    for (let at = 0; at < end; at += SLICE_BYTES) {
      parser.write(file.subarray(at, Math.min(at + SLICE_BYTES, end)));
      await nextTurn();
      if (failure) break;
      yield* ready.splice(0);
    }
    if (!failure && end === file.length) {
      parser.end();
      await ended;
    }
    if (failure) throw invalid('file', `The file is not valid CSV: ${failure.message}`, 'invalid_csv');
    yield* ready.splice(0);
  } finally {
    parser.destroy();
  }
}

const isLineBreak = (b: Buffer, i: number) => b[i] === 0x0a || (b[i] === 0x0d && b[i + 1] !== 0x0a);
const isBlank = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;

/**
 * The file line (1-based) each record starts on, from the byte offset where it ends, asked in
 * file order. Blank lines and quoted cells spanning lines move the records after them; csv-parse's
 * own line count cannot be used, as it counts a CRLF inside quotes as two lines.
 */
function lineCounter(buffer: Buffer): (end: number) => number {
  let line = 1;
  let at = 0;
  return (end) => {
    for (; at < end && isBlank(buffer[at]); at++) if (isLineBreak(buffer, at)) line++;
    const start = line;
    for (; at < end; at++) if (isLineBreak(buffer, at)) line++;
    return start;
  };
}
