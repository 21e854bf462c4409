/**
 * Query filters compiled to plain closures, for the operators segment filters and the product's
 * queries use: `$and $or $eq $ne $gt $gte $lt $lte $in $exists $regex $not` and implicit equality,
 * on plain dotted paths, with scalar operands. A closure answers true or false only where the
 * answer is certainly mingo's (and MongoDB's) and UNDECIDED otherwise: an array anywhere on a
 * path (array rules), a comparison between values of different types (cross-type order), an
 * object where a scalar is compared. The store asks mingo about those documents, so the answer
 * is always mingo's; on documents of the usual shape no document needs it.
 *
 * Evaluating a compiled closure costs a few property reads per condition; mingo's generic
 * evaluation costs about ten times more per document, which is what a count over a million
 * contacts spends its time on. test/unit/embedded-store-match.test.ts compares the two.
 */
import type { Filter } from '../../ports/store.ts';

/** The answer is not known without mingo. */
export const UNDECIDED = 2;
/** 0 false, 1 true, 2 undecided. */
export type Answer = 0 | 1 | 2;
export type CompiledFilter = (doc: unknown) => Answer;

type Scalar = string | number | boolean;
const MISSING = Symbol('missing');
const ARRAY = Symbol('array on the path');
type Resolved = Scalar | null | object | typeof MISSING | typeof ARRAY;

/** A compiled filter, or undefined when it uses anything outside the subset (mingo does it all). */
export function compileFilter(filter: Filter): CompiledFilter | undefined {
  try {
    return compileObject(filter);
  } catch (err) {
    if (err === UNSUPPORTED) return undefined;
    throw err;
  }
}

const UNSUPPORTED = Symbol('unsupported');
const unsupported = (): never => {
  throw UNSUPPORTED;
};

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

const isScalar = (v: unknown): v is Scalar => typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

function compileObject(filter: Filter): CompiledFilter {
  if (!isPlainObject(filter)) return unsupported();
  const parts: CompiledFilter[] = [];
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0) return unsupported();
      const clauses = value.map((clause) => compileObject(clause as Filter));
      parts.push(key === '$and' ? allOf(clauses) : anyOf(clauses));
    } else if (key.startsWith('$')) {
      return unsupported();
    } else {
      parts.push(compileField(key, value));
    }
  }
  return parts.length === 1 ? parts[0] : allOf(parts);
}

function allOf(clauses: CompiledFilter[]): CompiledFilter {
  if (clauses.length === 0) return () => 1;
  return (doc) => {
    let undecided = false;
    for (const clause of clauses) {
      const answer = clause(doc);
      if (answer === 0) return 0;
      if (answer === UNDECIDED) undecided = true;
    }
    return undecided ? UNDECIDED : 1;
  };
}

function anyOf(clauses: CompiledFilter[]): CompiledFilter {
  return (doc) => {
    let undecided = false;
    for (const clause of clauses) {
      const answer = clause(doc);
      if (answer === 1) return 1;
      if (answer === UNDECIDED) undecided = true;
    }
    return undecided ? UNDECIDED : 0;
  };
}

/** The parts of a path the closures walk: no empty part, `$`, or name Object.prototype has. */
function pathParts(path: string): string[] {
  if (path.length === 0 || path.includes('$')) return unsupported();
  const parts = path.split('.');
  for (const part of parts) if (part.length === 0 || part in Object.prototype || /^\d+$/.test(part)) return unsupported();
  return parts;
}

/** The value at a path: MISSING when absent (or a non-object on the way), ARRAY when an array is met. */
function resolve(doc: unknown, parts: string[]): Resolved {
  let value: unknown = doc;
  for (let i = 0; i < parts.length; i++) {
    if (value === null || typeof value !== 'object') return MISSING;
    if (Array.isArray(value)) return ARRAY;
    value = (value as Record<string, unknown>)[parts[i]];
  }
  if (value === undefined) return MISSING;
  if (Array.isArray(value)) return ARRAY;
  return value as Resolved;
}

/** A test of one resolved value (never ARRAY). */
type ValueTest = (value: Exclude<Resolved, typeof ARRAY>) => Answer;

function compileField(path: string, condition: unknown): CompiledFilter {
  const parts = pathParts(path);
  const test = compileCondition(condition);
  return (doc) => {
    const value = resolve(doc, parts);
    return value === ARRAY ? UNDECIDED : test(value);
  };
}

/** A field's condition: a scalar (equality), null (missing or null), or an operator object. */
function compileCondition(condition: unknown): ValueTest {
  if (isScalar(condition) || condition === null) return equals(condition);
  if (!isPlainObject(condition)) return unsupported();
  const keys = Object.keys(condition);
  if (keys.length === 0 || !keys.every((k) => k.startsWith('$'))) return unsupported();
  const tests: ValueTest[] = [];
  for (const key of keys) {
    const operand = condition[key];
    switch (key) {
      case '$eq':
        if (!isScalar(operand) && operand !== null) return unsupported();
        tests.push(equals(operand));
        break;
      case '$ne': {
        if (!isScalar(operand) && operand !== null) return unsupported();
        const eq = equals(operand);
        tests.push((v) => negate(eq(v)));
        break;
      }
      case '$in': {
        if (!Array.isArray(operand) || !operand.every((o) => isScalar(o) || o === null)) return unsupported();
        const set = new Set<unknown>(operand);
        const withNull = set.has(null);
        tests.push((v) => (v === MISSING || v === null ? (withNull ? 1 : 0) : set.has(v) ? 1 : 0));
        break;
      }
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        tests.push(order(key, operand));
        break;
      case '$exists':
        if (typeof operand !== 'boolean') return unsupported();
        tests.push((v) => ((v !== MISSING) === operand ? 1 : 0));
        break;
      case '$regex':
        tests.push(regex(operand, condition.$options));
        break;
      case '$options':
        if (!('$regex' in condition)) return unsupported();
        break;
      case '$not': {
        const inner = compileCondition(operand);
        tests.push((v) => negate(inner(v)));
        break;
      }
      default:
        return unsupported();
    }
  }
  if (tests.length === 1) return tests[0];
  return (v) => {
    let undecided = false;
    for (const test of tests) {
      const answer = test(v);
      if (answer === 0) return 0;
      if (answer === UNDECIDED) undecided = true;
    }
    return undecided ? UNDECIDED : 1;
  };
}

const negate = (answer: Answer): Answer => (answer === UNDECIDED ? UNDECIDED : answer === 1 ? 0 : 1);

/** Equality with a scalar (`===` on a non-array value) or with null (null or missing). */
function equals(operand: Scalar | null): ValueTest {
  if (operand === null) return (v) => (v === MISSING || v === null ? 1 : 0);
  // An object never equals a scalar; a stored number is finite (JSON).
  return (v) => (v === operand ? 1 : 0);
}

/** `$gt` and friends on two strings or two numbers; a missing field never compares. */
function order(op: '$gt' | '$gte' | '$lt' | '$lte', operand: unknown): ValueTest {
  if (typeof operand !== 'string' && !(typeof operand === 'number' && Number.isFinite(operand))) return unsupported();
  const type = typeof operand;
  return (v) => {
    if (v === MISSING) return 0;
    if (typeof v !== type) return UNDECIDED; // null, another type, an object: mingo's rules
    const a = v as string | number;
    const b = operand as string | number;
    switch (op) {
      case '$gt':
        return a > b ? 1 : 0;
      case '$gte':
        return a >= b ? 1 : 0;
      case '$lt':
        return a < b ? 1 : 0;
      default:
        return a <= b ? 1 : 0;
    }
  };
}

function regex(pattern: unknown, options: unknown): ValueTest {
  if (typeof pattern !== 'string' || (options !== undefined && (typeof options !== 'string' || !/^[imsu]*$/.test(options)))) return unsupported();
  const re = new RegExp(pattern, (options as string | undefined) ?? '');
  return (v) => {
    if (v === MISSING) return 0;
    if (typeof v !== 'string') return UNDECIDED;
    return re.test(v) ? 1 : 0;
  };
}
