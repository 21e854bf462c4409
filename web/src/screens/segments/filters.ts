/**
 * What the filter builder offers, in the product's words, from the API's own vocabulary
 * (domain/segments/vocabulary.ts): the fields, the operators each field kind takes, which take a
 * value and which a time unit. Plain functions, no React.
 */
import {
  APPLICABLE,
  TIMED,
  VALUELESS,
  fieldKindOf,
  type FieldKind,
  type FilterOperator,
} from '../../../../domain/segments/vocabulary.ts';
import type { FilterConditionInput } from '../../../../domain/segments/schema.ts';

/** A FilterCondition as the API's zod schema reads it. */
export type FilterCondition = FilterConditionInput;
export type ConditionFilter = FilterCondition['groups'][number]['filters'][number];

/** The field choices of the builder; `data` and `event` take a key or an event name beside them. */
export const FIELD_CHOICES = [
  { value: 'email', label: 'Email address' },
  { value: 'subscribed', label: 'Subscribed' },
  { value: 'createdAt', label: 'Created at' },
  { value: 'updatedAt', label: 'Updated at' },
  { value: 'data.', label: 'Contact data…' },
  { value: 'event.', label: 'Event…' },
  { value: 'email.opened', label: 'Opened an email' },
  { value: 'email.clicked', label: 'Clicked an email' },
  { value: 'email.bounced', label: 'Bounced' },
] as const;

/** The choice a field belongs to (`data.plan` is `data.`), and the key or event name after it. */
export function splitField(field: string): { choice: string; rest: string } {
  for (const prefix of ['data.', 'event.']) if (field.startsWith(prefix)) return { choice: prefix, rest: field.slice(prefix.length) };
  return { choice: field, rest: '' };
}

const LABELS: Record<FilterOperator, string> = {
  equals: 'is',
  notEquals: 'is not',
  contains: 'contains',
  notContains: 'does not contain',
  greaterThan: 'is greater than',
  lessThan: 'is less than',
  greaterThanOrEqual: 'is at least',
  lessThanOrEqual: 'is at most',
  exists: 'is set',
  notExists: 'is not set',
  within: 'is within the last',
  olderThan: 'is older than',
  triggered: 'happened',
  triggeredWithin: 'happened within the last',
  triggeredOlderThan: 'last happened more than',
  notTriggered: 'never happened',
};

/** On an event, comparisons count how many times it happened. */
const EVENT_LABELS: Partial<Record<FilterOperator, string>> = {
  greaterThan: 'happened more times than',
  lessThan: 'happened fewer times than',
  greaterThanOrEqual: 'happened at least (times)',
  lessThanOrEqual: 'happened at most (times)',
  exists: 'happened (exists)',
  notExists: 'never happened (notExists)',
};

export const operatorLabel = (kind: FieldKind | undefined, op: FilterOperator) => (kind === 'event' && EVENT_LABELS[op]) || LABELS[op];

/** The operators a field takes (every field kind's own list; all of them while the field is unfinished). */
export const operatorsFor = (field: string): readonly FilterOperator[] => {
  const kind = fieldKindOf(field);
  return kind ? APPLICABLE[kind] : APPLICABLE.data;
};

/** What input the value needs. */
export type ValueInput = 'none' | 'amount' | 'boolean' | 'instant' | 'count' | 'text';

export function valueInputOf(field: string, op: FilterOperator): ValueInput {
  if (VALUELESS.includes(op)) return 'none';
  if (TIMED.includes(op)) return 'amount';
  const kind = fieldKindOf(field);
  if (kind === 'subscribed') return 'boolean';
  if (kind === 'timestamp') return 'instant';
  if (kind === 'event') return 'count';
  return 'text';
}

/**
 * The filter after its field or operator changed: an operator the new field does not take becomes
 * its first one; the value and unit are kept only where the new pair reads them.
 */
export function reshape(filter: ConditionFilter): ConditionFilter {
  const ops = operatorsFor(filter.field);
  const operator = ops.includes(filter.operator) ? filter.operator : ops[0];
  const input = valueInputOf(filter.field, operator);
  const next: ConditionFilter = { field: filter.field, operator };
  if (input === 'amount') next.unit = filter.unit ?? 'days';
  if (input === 'boolean') next.value = typeof filter.value === 'boolean' ? filter.value : true;
  else if (input !== 'none' && filter.value !== undefined && typeof filter.value !== 'boolean') next.value = filter.value;
  return next;
}

export const newFilter = (): ConditionFilter => ({ field: 'email', operator: 'contains', value: '' });
export const newCondition = (): FilterCondition => ({ logic: 'AND', groups: [{ filters: [newFilter()] }] });

/** A number typed as text goes as a number where the API counts (amounts, event counts). */
export function typedValue(input: ValueInput, text: string): string | number {
  if ((input === 'amount' || input === 'count') && text.trim() !== '' && Number.isFinite(Number(text))) return Number(text);
  return text;
}

/** An ISO instant as the value of a datetime-local input (the user's local time), and back. */
export function toLocalInput(iso: unknown): string {
  if (typeof iso !== 'string' || Number.isNaN(Date.parse(iso))) return '';
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}
export const fromLocalInput = (local: string): string => (local && !Number.isNaN(Date.parse(local)) ? new Date(local).toISOString() : '');

/** The errors of one part of the condition (`groups.0.filters.1`), from field errors keyed by path. */
export function errorsUnder(errors: Record<string, string>, path: string): string[] {
  return Object.entries(errors)
    .filter(([key]) => key === path || key.startsWith(`${path}.`))
    .map(([, message]) => message);
}

/** Field errors of the API (`condition.groups.0…`, `audienceCondition.groups.0…`) keyed from the condition itself. */
export function relativeTo(errors: Record<string, string>, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, message] of Object.entries(errors)) {
    if (key === prefix) out[''] = message;
    else if (key.startsWith(`${prefix}.`)) out[key.slice(prefix.length + 1)] = message;
  }
  return out;
}

/** Errors of the condition checked on its own, keyed as the API keys them (`condition.groups.0…`). */
export function prefixed(errors: Record<string, string> | undefined, prefix: string): Record<string, string> {
  return Object.fromEntries(Object.entries(errors ?? {}).map(([key, message]) => [key === 'form' ? prefix : `${prefix}.${key}`, message]));
}
