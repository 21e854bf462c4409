/**
 * The FilterCondition compiler: a segment's condition becomes one store filter over the contact
 * projection (`contacts`), to be combined with `{projectId}`. The semantics of every field kind
 * and operator are fixed here and listed in docs/decisions.md ("Segments").
 *
 * The output uses only what the embedded store (mingo) and MongoDB/FerretDB agree on:
 * `$and $or $eq $ne $gt $gte $lt $lte $in $exists $regex $not`, on plain paths. Comparisons are
 * only ever made between values of one type (a data key's effective type decides), so the two
 * engines' cross-type rules never come into play. A key holding mixed types is read as text: a
 * value's text is matched by listing the non-text values whose text matches (`textForms`,
 * `mixedContains`), as no `$expr`/`$toString` is available on FerretDB.
 *
 * `matchesCondition` decides one document by running the same compiled filter through mingo,
 * the embedded store's engine, so deciding one contact can never drift from the query.
 */
import { Context } from 'mingo';
import * as queryOperatorModule from 'mingo/operators/query';
import { Query } from 'mingo/query';
import type { Filter } from '../../ports/store.ts';
import { eventKey, type ContactDoc } from '../contacts/collection.ts';
import { effectiveType, inferType, typesOf, type DataFieldTypes, type DataType } from '../contacts/data-types.ts';
import { AppError, type FieldError } from '../errors.ts';
import { LIMITS } from '../limits.ts';

import {
  APPLICABLE,
  EMAIL_ACTIVITY,
  FILTER_OPERATORS,
  TIMED,
  TIME_UNITS,
  VALUELESS,
  type FilterOperator,
  type TimeUnit,
} from './vocabulary.ts';

export { EMAIL_ACTIVITY, FILTER_OPERATORS, TIME_UNITS, VALUE_OPERATORS, type FilterOperator, type TimeUnit } from './vocabulary.ts';

export interface ConditionFilter {
  field: string;
  operator: FilterOperator;
  value?: string | number | boolean;
  unit?: TimeUnit;
}

export interface FilterCondition {
  logic: 'AND' | 'OR';
  groups: { filters: ConditionFilter[] }[];
}

export const MAX_GROUPS = LIMITS.filter.groups;
export const MAX_FILTERS_PER_GROUP = LIMITS.filter.filtersPerGroup;
const MAX_TEXT = LIMITS.filter.value;
const MAX_EVENT_NAME = LIMITS.eventName;
/** The longest look-back of `within`/`olderThan`: 100 years. */
const MAX_SPAN_MS = 36_525 * 86_400_000;
const UNIT_MS: Record<TimeUnit, number> = { days: 86_400_000, hours: 3_600_000, minutes: 60_000 };


export interface CompileOptions {
  /** The instant relative times (`within 7 days`) count back from. */
  now: Date;
  /** The types each data key has held in the project (`dataFieldTypes`); a mixed key reads as text. */
  types: DataFieldTypes;
  /**
   * The numbers each mixed key holds (`mixedTextKeys` names the keys a condition needs): `contains`
   * on a mixed key matches a number whose text holds the value (10 contains "1"). Without them
   * only text and booleans match, which is enough to validate a condition.
   */
  numbers?: Readonly<Record<string, readonly number[]>>;
  /** Told of each filter whose answer depends on a mixed key (see `conditionWarnings`). */
  onMixed?: (warning: MixedTypeWarning) => void;
  /**
   * true (the default; on create and update): a filter that does not fit its data key's current
   * type is a 422. false (when evaluating a saved segment whose key changed type since): such a
   * filter holds for no contact, and its negation (notEquals, notContains) for every contact.
   */
  strictTypes?: boolean;
  /** Where the condition sits in the request, for error fields. Default `condition`. */
  path?: string;
}

/**
 * Compiles a FilterCondition to a store filter over `contacts`, or throws a 422 whose field
 * errors name each bad part (a bad filter by its path `condition.groups.<i>.filters.<j>`).
 */
export function compileCondition(condition: unknown, options: CompileOptions): Filter {
  const clause = compile(condition, options);
  if (clause === true) return {};
  if (clause === false) return { _id: { $in: [] } };
  return clause;
}

/**
 * A reusable test of contact documents against a condition (compiled once; per document when it
 * searches a mixed key's text, whose numbers are then the document's own value).
 */
export function conditionMatcher(condition: unknown, options: Omit<CompileOptions, 'strictTypes'>): (doc: ContactDoc) => boolean {
  const test = (clause: Clause, doc: ContactDoc) => (typeof clause === 'boolean' ? clause : new Query(clause, QUERY_OPTIONS).test(doc));
  const searched = mixedTextKeys(condition, options.types);
  if (searched.length > 0) {
    return (doc) => {
      const numbers = Object.fromEntries(searched.map((key) => [key, typeof doc.data?.[key] === 'number' ? [doc.data[key]] : []]));
      return test(compile(condition, { ...options, numbers, strictTypes: false }), doc);
    };
  }
  const clause = compile(condition, { ...options, strictTypes: false });
  if (typeof clause === 'boolean') return () => clause;
  const query = new Query(clause, QUERY_OPTIONS);
  return (doc) => query.test(doc);
}

/** How a saved condition reads a data key that holds values of more than one type across contacts. */
export interface MixedTypeWarning {
  code: 'mixed_types';
  /** The filter's field, e.g. `data.score`. */
  field: string;
  /** The filter's path in the condition, e.g. `condition.groups.0.filters.1`. */
  filter: string;
  /** The types the key has held, e.g. `['number', 'string']`. */
  types: DataType[];
  message: string;
}

/**
 * The filters of a (saved, valid) condition whose answer depends on a mixed data key, each with
 * how it is read: compared as text, or, for a filter that needs one type, matching no contact
 * (its negation every contact). Presence (`exists`, `notExists`) does not depend on the type.
 */
export function conditionWarnings(condition: unknown, options: Pick<CompileOptions, 'now' | 'types' | 'path'>): MixedTypeWarning[] {
  const warnings: MixedTypeWarning[] = [];
  compile(condition, { ...options, strictTypes: false, onMixed: (w) => warnings.push(w) });
  return warnings;
}

/** The mixed data keys a condition searches with contains/notContains: their numbers are needed to compile it. */
export function mixedTextKeys(condition: unknown, types: DataFieldTypes): string[] {
  const keys = new Set<string>();
  const groups = isObject(condition) && Array.isArray(condition.groups) ? condition.groups : [];
  for (const group of groups) {
    for (const filter of isObject(group) && Array.isArray(group.filters) ? group.filters : []) {
      if (!isObject(filter) || (filter.operator !== 'contains' && filter.operator !== 'notContains')) continue;
      const key = mixedKeyOf(filter.field, types);
      if (key !== undefined) keys.add(key);
    }
  }
  return [...keys];
}

/** The data key a filter's field names, when that key is mixed. */
function mixedKeyOf(field: unknown, types: DataFieldTypes): string | undefined {
  if (typeof field !== 'string' || !field.startsWith('data.')) return undefined;
  const key = field.slice('data.'.length);
  const recorded = Object.hasOwn(types, key) ? types[key] : undefined;
  return recorded !== undefined && typesOf(recorded).length > 1 ? key : undefined;
}

/**
 * Whether one contact document satisfies the condition, exactly as the segment query would
 * decide it (the same compiled filter, run by the embedded store's engine). The caller checks
 * that the document belongs to the segment's project.
 */
export function matchesCondition(condition: unknown, doc: ContactDoc, options: Omit<CompileOptions, 'strictTypes'>): boolean {
  return conditionMatcher(condition, options)(doc);
}

/** mingo with its query operators only, as the embedded store builds its queries. */
const QUERY_OPTIONS = {
  context: Context.init({
    query: Object.fromEntries(Object.entries(queryOperatorModule).filter(([name]) => name.startsWith('$'))) as NonNullable<
      Parameters<typeof Context.init>[0]
    >['query'],
  }),
};

// ---- structure --------------------------------------------------------------------------------

/** A compiled piece: a store filter, or a constant when the answer is known for every contact. */
type Clause = Filter | boolean;

/** A problem with one filter; `fallback` marks a type mismatch, with its lenient answer. */
class FilterProblem extends Error {
  readonly code: string;
  readonly fallback?: boolean;
  constructor(message: string, code: string, fallback?: boolean) {
    super(message);
    this.code = code;
    this.fallback = fallback;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function compile(condition: unknown, options: CompileOptions): Clause {
  const path = options.path ?? 'condition';
  const errors: FieldError[] = [];
  const problem = (field: string, message: string, code = 'invalid') => errors.push({ field, message, code });

  if (!isObject(condition)) {
    problem(path, 'condition must be an object {logic, groups}', 'invalid_type');
    throw invalidCondition(errors);
  }
  for (const key of Object.keys(condition)) {
    if (key !== 'logic' && key !== 'groups') problem(`${path}.${key}`, `Unknown key "${key}"; a condition has logic and groups`, 'unrecognized_keys');
  }
  const { logic, groups } = condition;
  if (logic !== 'AND' && logic !== 'OR') problem(`${path}.logic`, 'logic must be "AND" or "OR"', 'invalid_value');
  if (!Array.isArray(groups) || groups.length === 0 || groups.length > MAX_GROUPS) {
    problem(`${path}.groups`, `groups must be an array of 1-${MAX_GROUPS} groups`, 'invalid_groups');
    throw invalidCondition(errors);
  }

  const compiled: Clause[] = [];
  groups.forEach((group, i) => {
    const groupPath = `${path}.groups.${i}`;
    if (!isObject(group)) return problem(groupPath, 'A group must be an object {filters}', 'invalid_type');
    for (const key of Object.keys(group)) {
      if (key !== 'filters') problem(`${groupPath}.${key}`, `Unknown key "${key}"; a group has filters`, 'unrecognized_keys');
    }
    const { filters } = group;
    if (!Array.isArray(filters) || filters.length === 0 || filters.length > MAX_FILTERS_PER_GROUP) {
      return problem(`${groupPath}.filters`, `filters must be an array of 1-${MAX_FILTERS_PER_GROUP} filters`, 'invalid_filters');
    }
    const clauses: Clause[] = [];
    filters.forEach((filter, j) => {
      const where = `${groupPath}.filters.${j}`;
      try {
        clauses.push(compileFilter(filter, options));
        noteMixed(filter, where, undefined, options);
      } catch (err) {
        if (!(err instanceof FilterProblem)) throw err;
        if (err.fallback !== undefined && options.strictTypes === false) {
          clauses.push(err.fallback);
          noteMixed(filter, where, err, options);
        } else problem(where, err.message, err.code);
      }
    });
    compiled.push(and(clauses));
  });
  if (errors.length > 0) throw invalidCondition(errors);
  return logic === 'OR' ? or(compiled) : and(compiled);
}

/** Tells `onMixed` how a filter on a mixed key was read: as text, or (`mismatch`) as its fallback. */
function noteMixed(filter: unknown, where: string, mismatch: FilterProblem | undefined, options: CompileOptions): void {
  if (!options.onMixed || !isObject(filter)) return;
  const key = mixedKeyOf(filter.field, options.types);
  if (key === undefined || filter.operator === 'exists' || filter.operator === 'notExists') return;
  const types = typesOf(options.types[key]);
  const message = mismatch
    ? `${mismatch.message}, so this filter matches ${mismatch.fallback ? 'every contact' : 'no contact'}`
    : `${filter.field} holds ${types.join(' and ')} values across contacts, so this filter compares each value as text (5 as "5", true as "true")`;
  options.onMixed({ code: 'mixed_types', field: filter.field as string, filter: where, types, message });
}

const invalidCondition = (errors: FieldError[]) =>
  new AppError('VALIDATION_ERROR', `Invalid filter condition: ${errors[0].field}: ${errors[0].message}`, { fieldErrors: errors });

/** AND of clauses: constants folded, nested $and flattened. */
function and(clauses: Clause[]): Clause {
  if (clauses.includes(false)) return false;
  const parts = clauses.filter((c): c is Filter => c !== true).flatMap((c) => (isOnly(c, '$and') ? (c.$and as Filter[]) : [c]));
  if (parts.length === 0) return true;
  return parts.length === 1 ? parts[0] : { $and: parts };
}

/** OR of clauses: constants folded, nested $or flattened. */
function or(clauses: Clause[]): Clause {
  if (clauses.includes(true)) return true;
  const parts = clauses.filter((c): c is Filter => c !== false).flatMap((c) => (isOnly(c, '$or') ? (c.$or as Filter[]) : [c]));
  if (parts.length === 0) return false;
  return parts.length === 1 ? parts[0] : { $or: parts };
}

const isOnly = (filter: Filter, key: string) => Object.keys(filter).length === 1 && key in filter;

// ---- one filter -------------------------------------------------------------------------------

type FieldRef =
  | { kind: 'email' }
  | { kind: 'subscribed' }
  | { kind: 'timestamp'; name: 'createdAt' | 'updatedAt' }
  | { kind: 'data'; key: string; path: string }
  | { kind: 'event'; name: string; path: string };

const FILTER_KEYS = new Set(['field', 'operator', 'value', 'unit']);

const fail = (message: string, code = 'invalid_value'): never => {
  throw new FilterProblem(message, code);
};
/** A filter that does not fit the data key's current type: a 422, or `fallback` when lenient. */
const mismatch = (message: string, fallback: boolean): never => {
  throw new FilterProblem(message, 'type_mismatch', fallback);
};

function compileFilter(filter: unknown, options: CompileOptions): Clause {
  if (!isObject(filter)) return fail('A filter must be an object {field, operator, value, unit}', 'invalid_type');
  const unknown = Object.keys(filter).filter((key) => !FILTER_KEYS.has(key));
  if (unknown.length > 0) fail(`Unknown key "${unknown[0]}"; a filter has field, operator, value and unit`, 'unrecognized_keys');
  const { field: fieldName, operator, value, unit } = filter;
  if (typeof fieldName !== 'string') return fail('field must be a string', 'invalid_field');
  const field = parseField(fieldName);
  if (typeof operator !== 'string' || !(FILTER_OPERATORS as readonly string[]).includes(operator)) {
    return fail(`Unknown operator ${JSON.stringify(operator)}; use one of ${FILTER_OPERATORS.join(', ')}`, 'unknown_operator');
  }
  const op = operator as FilterOperator;
  if (!APPLICABLE[field.kind].includes(op)) {
    fail(`${op} does not apply to ${fieldName}; use one of ${APPLICABLE[field.kind].join(', ')}`, 'operator_not_applicable');
  }
  if (TIMED.includes(op)) {
    if (unit === undefined) fail(`${op} needs a unit: ${TIME_UNITS.join(', ')}`, 'invalid_unit');
    if (typeof unit !== 'string' || !(TIME_UNITS as readonly string[]).includes(unit)) {
      fail(`Unknown unit ${JSON.stringify(unit)}; use one of ${TIME_UNITS.join(', ')}`, 'invalid_unit');
    }
  } else if (unit !== undefined && unit !== null) {
    fail(`unit applies only to ${TIMED.join(', ')}`, 'invalid_unit');
  }
  const given = VALUELESS.includes(op) ? undefined : scalar(value, op);
  const ctx: Leaf = { op, value: given, unit: unit as TimeUnit, name: fieldName, options };
  switch (field.kind) {
    case 'email':
      return emailFilter(ctx);
    case 'subscribed':
      return subscribedFilter(ctx);
    case 'timestamp':
      return timestampFilter(field.name, ctx);
    case 'data':
      return dataFilter(field.key, field.path, ctx);
    case 'event':
      return eventFilter(field.path, ctx);
  }
}

interface Leaf {
  op: FilterOperator;
  /** The filter's value; undefined for operators that take none. */
  value: string | number | boolean | undefined;
  unit: TimeUnit;
  /** The field as written, for messages. */
  name: string;
  options: CompileOptions;
}

function parseField(name: string): FieldRef {
  if (name === 'email') return { kind: 'email' };
  if (name === 'subscribed') return { kind: 'subscribed' };
  if (name === 'createdAt' || name === 'updatedAt') return { kind: 'timestamp', name };
  if (name in EMAIL_ACTIVITY) return { kind: 'event', name: EMAIL_ACTIVITY[name], path: `eventStats.${eventKey(EMAIL_ACTIVITY[name])}` };
  if (name.startsWith('data.')) {
    const key = name.slice('data.'.length);
    // The rules of data keys (see contacts/schema.ts), so the path names exactly that key.
    if (key.length === 0 || key.length > 100 || key.includes('.') || key.startsWith('$') || key === '__proto__') {
      return fail(`"${key}" cannot be a data key: keys are 1-100 characters, without "." or a leading "$"`, 'unknown_field');
    }
    return { kind: 'data', key, path: name };
  }
  if (name.startsWith('event.')) {
    const event = name.slice('event.'.length);
    if (event.length === 0 || event.length > MAX_EVENT_NAME) return fail(`Event names are 1-${MAX_EVENT_NAME} characters`, 'unknown_field');
    return { kind: 'event', name: event, path: `eventStats.${eventKey(event)}` };
  }
  return fail(
    `Unknown field "${name}"; use email, subscribed, createdAt, updatedAt, data.<key>, event.<name>, email.opened, email.clicked or email.bounced`,
    'unknown_field',
  );
}

function scalar(value: unknown, op: FilterOperator): string | number | boolean {
  if (value === undefined || value === null) return fail(`${op} needs a value`);
  if (typeof value === 'string') {
    if (value.length > MAX_TEXT) fail(`value is at most ${MAX_TEXT} characters`);
    return value;
  }
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  return fail('value must be a string, a number or a boolean', 'invalid_type');
}

// ---- values -----------------------------------------------------------------------------------

const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

/** A number, or a string that reads as one ("5", "-2.5"); undefined otherwise. */
function asNumber(value: unknown): number | undefined {
  if (typeof value === 'number') return value;
  if (typeof value === 'string' && NUMERIC.test(value.trim())) {
    const n = Number(value.trim());
    return Number.isFinite(n) ? n : undefined;
  }
  return undefined;
}

function asBoolean(value: unknown): boolean | undefined {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true';
  return undefined;
}

/** An ISO 8601 timestamp string (the inference of data types); undefined otherwise. */
const asDate = (value: unknown): string | undefined =>
  typeof value === 'string' && inferType(value) === 'date' ? value : undefined;

/** The stored values whose text is the text of `value`: "5" and 5, "true" and true. */
function textForms(value: string | number | boolean): (string | number | boolean)[] {
  const text = String(value);
  const forms: (string | number | boolean)[] = [text];
  const n = asNumber(text);
  if (n !== undefined && String(n) === text) forms.push(n);
  if (text === 'true' || text === 'false') forms.push(text === 'true');
  return forms;
}

/** `now` minus the filter's amount of units, as an ISO string (how the store keeps time). */
function cutoff(leaf: Leaf): string {
  const amount = asNumber(leaf.value);
  if (amount === undefined || !(amount > 0)) fail(`${leaf.op} needs a positive number of ${leaf.unit} as value`);
  const span = amount! * UNIT_MS[leaf.unit];
  if (span > MAX_SPAN_MS) fail(`${leaf.op} looks back at most 100 years`);
  return new Date(leaf.options.now.getTime() - span).toISOString();
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Case-insensitive, literal substring. */
function containsText(leaf: Leaf): { $regex: string; $options: string } {
  const v = leaf.value;
  if (typeof v === 'boolean' || v === '') fail(`${leaf.op} needs a non-empty text (or number) as value`);
  return { $regex: escapeRegex(String(v)), $options: 'i' };
}

/**
 * `contains` on a mixed key, on each value's text: strings by the regex; numbers and booleans,
 * which a regex never matches in the store, by listing those whose text matches (10 and 15
 * contain "1", true contains "RU"). `numbers` are the ones the key holds. Plain query language,
 * so SQLite, mingo and FerretDB (no `$expr`/`$toString` there) give the same answer.
 */
function mixedContains(path: string, regex: { $regex: string; $options: string }, numbers: readonly number[], negate: boolean): Filter {
  const text = new RegExp(regex.$regex, 'i');
  const others = [...numbers, true, false].filter((v) => text.test(String(v)));
  if (others.length === 0) return negate ? { [path]: { $not: regex } } : { [path]: regex };
  if (!negate) return { $or: [{ [path]: regex }, { [path]: { $in: others } }] };
  return { $and: [{ [path]: { $not: regex } }, { [path]: { $not: { $in: others } } }] };
}

const ORDER: Partial<Record<FilterOperator, string>> = {
  greaterThan: '$gt',
  lessThan: '$lt',
  greaterThanOrEqual: '$gte',
  lessThanOrEqual: '$lte',
};

/** Equality with any of `values`, or its negation (which holds for a missing field too). */
function oneOf(path: string, values: unknown[], negate: boolean): Filter {
  if (!negate) return values.length === 1 ? { [path]: { $eq: values[0] } } : { [path]: { $in: values } };
  return values.length === 1 ? { [path]: { $ne: values[0] } } : { $and: values.map((v) => ({ [path]: { $ne: v } })) };
}

const present = (path: string): Filter => ({ [path]: { $exists: true, $ne: null } });
const absent = (path: string): Filter => ({ $or: [{ [path]: { $exists: false } }, { [path]: { $eq: null } }] });

// ---- field kinds ------------------------------------------------------------------------------

/** Emails are stored trimmed and lower-cased, so equality compares the value the same way. */
function emailFilter(leaf: Leaf): Clause {
  switch (leaf.op) {
    case 'equals':
    case 'notEquals': {
      if (typeof leaf.value !== 'string') return fail('email compares with a text value');
      return oneOf('email', [leaf.value.trim().toLowerCase()], leaf.op === 'notEquals');
    }
    case 'contains':
      return { email: containsText(leaf) };
    case 'notContains':
      return { email: { $not: containsText(leaf) } };
    case 'exists':
      return true; // every contact has an email
    default:
      return false; // notExists
  }
}

function subscribedFilter(leaf: Leaf): Clause {
  if (leaf.op === 'exists') return true;
  if (leaf.op === 'notExists') return false;
  const b = asBoolean(leaf.value);
  if (b === undefined) return fail('subscribed compares with true or false');
  return oneOf('subscribed', [b], leaf.op === 'notEquals');
}

/** createdAt/updatedAt are stored as `toISOString()`, so a given instant is normalized the same way. */
function timestampFilter(name: 'createdAt' | 'updatedAt', leaf: Leaf): Clause {
  const instant = () => {
    const date = asDate(leaf.value);
    if (date === undefined) return fail(`${name} compares with an ISO 8601 timestamp`);
    return new Date(date).toISOString();
  };
  switch (leaf.op) {
    case 'exists':
      return true;
    case 'notExists':
      return false;
    case 'within':
      return { [name]: { $gte: cutoff(leaf) } };
    case 'olderThan':
      return { [name]: { $lt: cutoff(leaf) } };
    case 'equals':
    case 'notEquals':
      return oneOf(name, [instant()], leaf.op === 'notEquals');
    default:
      return { [name]: { [ORDER[leaf.op]!]: instant() } };
  }
}

/**
 * `data.<key>`: the key's effective type in the project decides how values compare. A key no
 * contact has yet has no type: then the value decides. A mixed key reads as a string.
 */
function dataFilter(key: string, path: string, leaf: Leaf): Clause {
  const recorded = Object.hasOwn(leaf.options.types, key) ? leaf.options.types[key] : undefined;
  const type = recorded === undefined ? undefined : effectiveType(recorded);
  const mixed = recorded !== undefined && typesOf(recorded).length > 1;
  const typeName =
    type === undefined
      ? ''
      : mixed
        ? `${leaf.name} holds ${typesOf(recorded).join(' and ')} values, read as text`
        : `${leaf.name} holds ${type === 'string' ? 'text' : `${type}s`}`;
  switch (leaf.op) {
    case 'exists':
      return present(path);
    case 'notExists':
      return absent(path);
    case 'equals':
    case 'notEquals': {
      const negate = leaf.op === 'notEquals';
      const v = leaf.value!;
      if (type === 'number') {
        const n = asNumber(v);
        if (n === undefined) return mismatch(`${typeName}; ${JSON.stringify(v)} is not a number`, negate);
        return oneOf(path, [n], negate);
      }
      if (type === 'boolean') {
        const b = asBoolean(v);
        if (b === undefined) return mismatch(`${typeName}; ${JSON.stringify(v)} is not true or false`, negate);
        return oneOf(path, [b], negate);
      }
      if (type === 'date') {
        if (typeof v !== 'string') return mismatch(`${typeName}; compare it with an ISO 8601 string`, negate);
        return oneOf(path, [v], negate);
      }
      return oneOf(path, textForms(v), negate);
    }
    case 'contains':
    case 'notContains': {
      const negate = leaf.op === 'notContains';
      const regex = containsText(leaf);
      if (type === 'number' || type === 'boolean') return mismatch(`${typeName}; ${leaf.op} looks inside text only`, negate);
      if (mixed) return mixedContains(path, regex, leaf.options.numbers?.[key] ?? [], negate);
      return negate ? { [path]: { $not: regex } } : { [path]: regex };
    }
    case 'within':
    case 'olderThan': {
      const from = cutoff(leaf);
      if (type !== undefined && type !== 'date') return mismatch(`${typeName}; ${leaf.op} needs a key of ISO 8601 dates`, false);
      // A future date is not "within the last N units".
      return { [path]: leaf.op === 'within' ? { $gte: from, $lte: leaf.options.now.toISOString() } : { $lt: from } };
    }
    default: {
      const operator = ORDER[leaf.op]!;
      const date = asDate(leaf.value);
      const n = date === undefined ? asNumber(leaf.value) : undefined;
      if (date === undefined && n === undefined) return fail(`${leaf.op} compares with a number or an ISO 8601 date`);
      const wanted: DataType = date !== undefined ? 'date' : 'number';
      if (type !== undefined && type !== wanted) {
        return mismatch(`${typeName}; ${leaf.op} compares ${wanted === 'date' ? 'dates' : 'numbers'} only`, false);
      }
      // Dates compare as the ISO strings they are stored as.
      return { [path]: { [operator]: date ?? n } };
    }
  }
}

/** `event.<name>` and email activity: the contact's summary of that event (count, first, last). */
function eventFilter(statsPath: string, leaf: Leaf): Clause {
  const count = `${statsPath}.count`;
  const never: Filter = { $or: [{ [count]: { $exists: false } }, { [count]: { $lt: 1 } }] };
  switch (leaf.op) {
    case 'triggered':
    case 'exists':
      return { [count]: { $gte: 1 } };
    case 'notTriggered':
    case 'notExists':
      return never;
    case 'triggeredWithin':
      return { [`${statsPath}.last`]: { $gte: cutoff(leaf) } };
    case 'triggeredOlderThan':
      return { [`${statsPath}.last`]: { $lt: cutoff(leaf) } };
    default: {
      // How many times it was tracked; never tracked counts as 0.
      const n = asNumber(leaf.value);
      if (n === undefined || n < 0) return fail(`${leaf.op} on an event compares its count with a number of 0 or more`);
      const atMost = (bound: Filter) => ({ $or: [{ [count]: { $exists: false } }, { [count]: bound }] });
      switch (leaf.op) {
        case 'greaterThan':
          return { [count]: { $gt: n } };
        case 'greaterThanOrEqual':
          return n <= 0 ? true : { [count]: { $gte: n } };
        case 'lessThan':
          return n <= 0 ? false : atMost({ $lt: n });
        default:
          return atMost({ $lte: n });
      }
    }
  }
}
