import { parse } from 'csv-parse/sync';
import { z } from 'zod';
import { contactDataSchema, emailSchema, MANAGED_KEYS, type ContactData } from '../contacts/schema.ts';
import { AppError, invalid } from '../errors.ts';
import { LIMITS } from '../limits.ts';
import type { ImportRow } from './collection.ts';

/** Columns an export of ours carries that an import must not write. */
const IGNORED_COLUMNS = new Set(['id', 'createdat', 'updatedat']);

const BOOLEAN: Record<string, boolean> = { true: true, false: false, yes: true, no: false, '1': true, '0': false };

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
 * Reads an import file: the header must have an `email` column; the other columns become data.
 * File-level problems are a 422 now; row-level problems are reported per row by the job.
 */
export function parseContactsCsv(buffer: Buffer): { rows: ImportRow[]; rejected: { row: number; message: string }[] } {
  let parsed: { record: string[]; info: { bytes: number } }[];
  try {
    // With `info`, each record comes as {record, info}; the typings don't model that option.
    parsed = parse(buffer, { bom: true, skip_empty_lines: true, relax_column_count: true, trim: true, info: true }) as unknown as typeof parsed;
  } catch (err) {
    throw invalid('file', `The file is not valid CSV: ${(err as Error).message}`, 'invalid_csv');
  }
  const lines = startLines(buffer, parsed.map((p) => p.info.bytes));
  const [header, ...body] = parsed.map((p) => p.record);
  if (!header) throw invalid('file', 'The file is empty', 'empty_csv');
  const names = header.map((h) => h.trim());
  const emailAt = names.findIndex((h) => h.toLowerCase() === 'email');
  if (emailAt < 0) throw invalid('file', 'The CSV header has no "email" column', 'missing_email_column');
  if (body.length === 0) throw invalid('file', 'The CSV has a header but no rows', 'empty_csv');
  if (body.length > LIMITS.csvRows) {
    throw invalid('file', `The CSV has ${body.length} rows; at most ${LIMITS.csvRows} per import (split the file)`, 'too_many_rows');
  }
  const subscribedAt = names.findIndex((h) => h.toLowerCase() === 'subscribed');
  const dataColumns = names
    .map((name, index) => ({ name, index }))
    .filter(({ name, index }) => index !== emailAt && index !== subscribedAt && name !== '' && !IGNORED_COLUMNS.has(name.toLowerCase()));
  const badColumns = dataColumns.filter(({ name }) => (MANAGED_KEYS as readonly string[]).includes(name));
  const keyCheck = contactDataSchema.safeParse(Object.fromEntries(dataColumns.map(({ name }) => [name, ''])));
  if (badColumns.length > 0 || !keyCheck.success) {
    throw new AppError('VALIDATION_ERROR', 'The CSV header has columns that cannot be data fields', {
      fieldErrors: keyCheck.success ? [] : keyCheck.error.issues.map((i) => ({ field: `file.${i.path.join('.')}`, message: i.message, code: 'invalid_column' })),
    });
  }

  const rows: ImportRow[] = [];
  const rejected: { row: number; message: string }[] = [];
  body.forEach((cells, i) => {
    const row = lines[i + 1];
    const email = emailSchema.safeParse(cells[emailAt] ?? '');
    if (!email.success) {
      rejected.push({ row, message: `Invalid email address "${cells[emailAt] ?? ''}"` });
      return;
    }
    const data: ContactData = {};
    for (const { name, index } of dataColumns) {
      const cell = cells[index];
      if (cell !== undefined && cell !== '') data[name] = typed(cell);
    }
    const checked = contactDataSchema.safeParse(data);
    if (!checked.success) {
      rejected.push({ row, message: z.prettifyError(checked.error) });
      return;
    }
    const subscribedCell = subscribedAt >= 0 ? (cells[subscribedAt] ?? '').toLowerCase() : '';
    if (subscribedCell !== '' && !(subscribedCell in BOOLEAN)) {
      rejected.push({ row, message: `subscribed must be true or false, got "${cells[subscribedAt]}"` });
      return;
    }
    rows.push({ row, email: email.data, data: checked.data, ...(subscribedCell !== '' ? { subscribed: BOOLEAN[subscribedCell] } : {}) });
  });
  return { rows, rejected };
}

const isLineBreak = (b: Buffer, i: number) => b[i] === 0x0a || (b[i] === 0x0d && b[i + 1] !== 0x0a);
const isBlank = (byte: number) => byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d;

/**
 * The file line (1-based) each record starts on, from the byte offsets where records end. Blank
 * lines and quoted cells spanning lines move the records after them; csv-parse's own line count
 * cannot be used, as it counts a CRLF inside quotes as two lines.
 */
function startLines(buffer: Buffer, ends: number[]): number[] {
  const lines: number[] = [];
  let line = 1;
  let at = 0;
  for (const end of ends) {
    for (; at < end && isBlank(buffer[at]); at++) if (isLineBreak(buffer, at)) line++;
    lines.push(line);
    for (; at < end; at++) if (isLineBreak(buffer, at)) line++;
  }
  return lines;
}
