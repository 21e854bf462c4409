// The CONDITION step: one test of one contact, never a query over all contacts.
//
// `field` is one of
// - any segment filter field (`email`, `subscribed`, `data.<key>`, `createdAt`, `event.<name>`,
//   `email.opened`, …) with the segment operators: decided by the segment filter compiler on the
//   contact's own document (the same compiled filter a segment query uses);
// - `segment` with `memberOf` / `notMemberOf` and a segment id as `value`;
// - `trigger.data.<key>`: the data of the event that started the execution, non-persistent
//   values included, with equals, notEquals, contains, notContains, greaterThan, lessThan,
//   greaterThanOrEqual, lessThanOrEqual, exists, notExists.
import type { Platform } from '../../runtime/platform.ts';
import { contacts } from '../contacts/collection.ts';
import { dataFieldTypes } from '../contacts/data-types.ts';
import { AppError, invalid } from '../errors.ts';
import { memberId, segmentMembers, segments } from '../segments/collection.ts';
import { VALUE_OPERATORS, compileCondition, matchesCondition, type FilterCondition } from '../segments/filter.ts';

export const SEGMENT_OPERATORS = ['memberOf', 'notMemberOf'] as const;
export const TRIGGER_DATA_PREFIX = 'trigger.data.';
/** Trigger data takes the segment filter's value operators (compared by compareValue below). */
export const TRIGGER_OPERATORS = VALUE_OPERATORS;

export interface ConditionConfig {
  field: string;
  operator: string;
  value?: unknown;
  unit?: string;
}

/** A step that cannot be decided any more (its segment or contact is gone). */
export class ConditionError extends Error {}

const single = (c: ConditionConfig): FilterCondition =>
  ({ logic: 'AND', groups: [{ filters: [{ field: c.field, operator: c.operator, ...(c.value !== undefined ? { value: c.value } : {}), ...(c.unit !== undefined ? { unit: c.unit } : {}) }] }] }) as FilterCondition;

/** At step creation: a config that cannot be decided is a 422 naming `config.<part>`. */
export async function checkConditionConfig(p: Platform, projectId: string, config: ConditionConfig): Promise<void> {
  if (config.field === 'segment') {
    if (!(SEGMENT_OPERATORS as readonly string[]).includes(config.operator)) {
      throw invalid('config.operator', `With field "segment" the operator is ${SEGMENT_OPERATORS.join(' or ')}`, 'unknown_operator');
    }
    if (typeof config.value !== 'string' || !(await segments(p.store).findOne({ _id: config.value, projectId }, { projection: { _id: 1 } }))) {
      throw invalid('config.value', 'value must be the id of a segment of the project', 'not_found');
    }
    if (config.unit !== undefined) throw invalid('config.unit', 'unit is not used with field "segment"', 'invalid_unit');
    return;
  }
  if (config.field.startsWith(TRIGGER_DATA_PREFIX)) {
    if (config.field.length === TRIGGER_DATA_PREFIX.length) throw invalid('config.field', 'Name the key: trigger.data.<key>', 'unknown_field');
    if (!(TRIGGER_OPERATORS as readonly string[]).includes(config.operator)) {
      throw invalid('config.operator', `On trigger data the operator is one of ${TRIGGER_OPERATORS.join(', ')}`, 'unknown_operator');
    }
    const needsValue = config.operator !== 'exists' && config.operator !== 'notExists';
    if (needsValue && !['string', 'number', 'boolean'].includes(typeof config.value)) {
      throw invalid('config.value', 'value must be a string, number or boolean', 'invalid_value');
    }
    if (config.unit !== undefined) throw invalid('config.unit', 'unit is not used on trigger data', 'invalid_unit');
    return;
  }
  try {
    compileCondition(single(config), { now: new Date(), types: await dataFieldTypes(p.store, projectId), path: 'config' });
  } catch (err) {
    // The compiler names the filter `config.groups.0.filters.0`; here it is the config itself.
    if (err instanceof AppError && err.fieldErrors) {
      throw new AppError('VALIDATION_ERROR', err.message, {
        fieldErrors: err.fieldErrors.map((f) => ({ ...f, field: f.field.replace(/^config\.groups\.0\.filters\.0/, 'config') })),
      });
    }
    throw err;
  }
}

/** Decides a CONDITION for one contact at `now`; throws ConditionError when it cannot be decided. */
export async function evaluateCondition(
  p: Platform,
  execution: { projectId: string; contactId: string; trigger: { data: Record<string, unknown> } },
  config: ConditionConfig,
  now: Date,
): Promise<boolean> {
  if (config.field.startsWith(TRIGGER_DATA_PREFIX)) {
    return compareValue(execution.trigger.data[config.field.slice(TRIGGER_DATA_PREFIX.length)], config.operator, config.value);
  }
  if (config.field === 'segment') {
    const segment = await segments(p.store).findOne({ _id: String(config.value) });
    if (!segment || segment.projectId !== execution.projectId) throw new ConditionError(`Segment ${String(config.value)} no longer exists`);
    let member: boolean;
    if (segment.type === 'STATIC') {
      member = !!(await segmentMembers(p.store).findOne({ _id: memberId(segment._id, execution.contactId) }, { projection: { _id: 1 } }));
    } else {
      const doc = await contactDoc(p, execution);
      member = matchesCondition(segment.condition, doc, { now, types: await dataFieldTypes(p.store, execution.projectId) });
    }
    return config.operator === 'memberOf' ? member : !member;
  }
  const doc = await contactDoc(p, execution);
  return matchesCondition(single(config), doc, { now, types: await dataFieldTypes(p.store, execution.projectId) });
}

async function contactDoc(p: Platform, execution: { projectId: string; contactId: string }) {
  const doc = await contacts(p.store).findOne({ _id: execution.contactId });
  if (!doc || doc.projectId !== execution.projectId) throw new ConditionError('The contact no longer exists');
  return doc;
}

/** Trigger data tests: numbers compare as numbers (numeric strings too), text case-insensitively. */
export function compareValue(actual: unknown, operator: string, expected: unknown): boolean {
  const present = actual !== undefined && actual !== null;
  const num = (v: unknown) => (typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN);
  const a = num(actual);
  const b = num(expected);
  const numeric = Number.isFinite(a) && Number.isFinite(b);
  const same = present && (numeric ? a === b : String(actual).toLowerCase() === String(expected).toLowerCase());
  const contains = present && typeof expected !== 'boolean' && String(actual).toLowerCase().includes(String(expected).toLowerCase());
  switch (operator) {
    case 'exists':
      return present;
    case 'notExists':
      return !present;
    case 'equals':
      return same;
    case 'notEquals':
      return !same;
    case 'contains':
      return contains;
    case 'notContains':
      return !contains;
    case 'greaterThan':
      return present && numeric && a > b;
    case 'lessThan':
      return present && numeric && a < b;
    case 'greaterThanOrEqual':
      return present && numeric && a >= b;
    case 'lessThanOrEqual':
      return present && numeric && a <= b;
    default:
      return false;
  }
}
