import { inferType, type DataType, type SimpleValue } from '../../../../domain/contacts/schema.ts';

/**
 * The typed data editor's model: one row per key, its type and its value as the input holds it.
 * Types follow the API's own inference (`inferType`): a date is an ISO 8601 string.
 */
export interface DataRow {
  /** Stable across renders, so React keeps each row's inputs. */
  id: number;
  key: string;
  type: DataType;
  /** Text for string, number and date (a datetime-local value); 'true'/'false' for boolean. */
  value: string;
}

export const DATA_TYPES: { type: DataType; label: string }[] = [
  { type: 'string', label: 'Text' },
  { type: 'number', label: 'Number' },
  { type: 'boolean', label: 'Yes/no' },
  { type: 'date', label: 'Date' },
];

let nextId = 1;
export const newRow = (key = '', type: DataType = 'string', value = ''): DataRow => ({ id: nextId++, key, type, value });

const pad = (n: number) => String(n).padStart(2, '0');

/** An ISO instant as a datetime-local value in the user's time zone. */
export function toLocalInput(iso: string): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function rowsOf(data: Record<string, SimpleValue>): DataRow[] {
  return Object.entries(data).map(([key, value]) => {
    const type = inferType(value);
    return newRow(key, type, type === 'date' ? toLocalInput(String(value)) : String(value));
  });
}

/** The value a row stands for, or an error message for its input. */
export function valueOf(row: DataRow): { value: SimpleValue } | { error: string } {
  switch (row.type) {
    case 'number': {
      const n = Number(row.value);
      return row.value.trim() === '' || !Number.isFinite(n) ? { error: 'Enter a number' } : { value: n };
    }
    case 'boolean':
      return { value: row.value === 'true' };
    case 'date': {
      const d = new Date(row.value);
      return row.value === '' || Number.isNaN(d.getTime()) ? { error: 'Enter a date and time' } : { value: d.toISOString() };
    }
    default:
      return { value: row.value };
  }
}

/**
 * The `data` to send: every row's value, and null for each key of `before` no longer in the rows
 * (the API removes a key given null). Errors are by `data.<key>` like the API's, or by row for a
 * key given twice.
 */
export function dataOf(rows: DataRow[], before: Record<string, SimpleValue> = {}): { data: Record<string, SimpleValue | null>; errors: Record<string, string> } {
  const data: Record<string, SimpleValue | null> = {};
  const errors: Record<string, string> = {};
  for (const row of rows) {
    const key = row.key.trim();
    if (key in data) {
      errors[`data.${key}`] = `"${key}" is given twice`;
      continue;
    }
    const parsed = valueOf(row);
    if ('error' in parsed) errors[`data.${key}`] = parsed.error;
    else data[key] = parsed.value;
  }
  for (const key of Object.keys(before)) if (!(key in data)) data[key] = null;
  return { data, errors };
}

/** How a value reads in a table. */
export function display(value: SimpleValue): string {
  const type = inferType(value);
  if (type === 'date') return new Date(String(value)).toLocaleString();
  if (type === 'boolean') return value ? 'Yes' : 'No';
  return String(value);
}
