/**
 * The words of a FilterCondition: its operators, time units, the kinds of field and which
 * operators each kind takes. Plain data, shared by the compiler (filter.ts), the API's schemas and
 * the dashboard's filter builder (web/), so the builder offers exactly what the API accepts.
 * Imports nothing: whatever this file imports ends up in the browser bundle.
 */

/** The operators that compare a value or test its presence (a workflow CONDITION's trigger data takes these). */
export const VALUE_OPERATORS = [
  'equals',
  'notEquals',
  'contains',
  'notContains',
  'greaterThan',
  'lessThan',
  'greaterThanOrEqual',
  'lessThanOrEqual',
  'exists',
  'notExists',
] as const;

export const FILTER_OPERATORS = [
  ...VALUE_OPERATORS,
  'within',
  'olderThan',
  'triggered',
  'triggeredWithin',
  'triggeredOlderThan',
  'notTriggered',
] as const;
export type FilterOperator = (typeof FILTER_OPERATORS)[number];

export const TIME_UNITS = ['days', 'hours', 'minutes'] as const;
export type TimeUnit = (typeof TIME_UNITS)[number];

export const SEGMENT_TYPES = ['DYNAMIC', 'STATIC'] as const;
export type SegmentType = (typeof SEGMENT_TYPES)[number];

/** The email activity fields and the system events whose summaries they read. */
export const EMAIL_ACTIVITY: Record<string, string> = {
  'email.opened': 'email.open',
  'email.clicked': 'email.click',
  'email.bounced': 'email.bounce',
};

export type FieldKind = 'email' | 'subscribed' | 'timestamp' | 'data' | 'event';

/** Which operators each kind of field takes. */
export const APPLICABLE: Record<FieldKind, readonly FilterOperator[]> = {
  email: ['equals', 'notEquals', 'contains', 'notContains', 'exists', 'notExists'],
  subscribed: ['equals', 'notEquals', 'exists', 'notExists'],
  timestamp: ['equals', 'notEquals', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'exists', 'notExists', 'within', 'olderThan'],
  data: [
    'equals', 'notEquals', 'contains', 'notContains', 'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual',
    'exists', 'notExists', 'within', 'olderThan',
  ],
  event: [
    'greaterThan', 'lessThan', 'greaterThanOrEqual', 'lessThanOrEqual', 'exists', 'notExists',
    'triggered', 'notTriggered', 'triggeredWithin', 'triggeredOlderThan',
  ],
};

/** The operators that look back a number of `unit`s from now. */
export const TIMED: readonly FilterOperator[] = ['within', 'olderThan', 'triggeredWithin', 'triggeredOlderThan'];
/** The operators that take no value. */
export const VALUELESS: readonly FilterOperator[] = ['exists', 'notExists', 'triggered', 'notTriggered'];

/** The kind of a field as written (`data.plan`, `event.signed-up`, `email.opened`), or undefined for an unknown one. */
export function fieldKindOf(name: string): FieldKind | undefined {
  if (name === 'email' || name === 'subscribed') return name;
  if (name === 'createdAt' || name === 'updatedAt') return 'timestamp';
  if (name in EMAIL_ACTIVITY || name.startsWith('event.')) return 'event';
  if (name.startsWith('data.')) return 'data';
  return undefined;
}
