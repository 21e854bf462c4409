/**
 * MongoDB update operators applied to one document, as the store's writes need them: the update
 * of a matched document, and the document an upsert inserts. `$set`, `$unset`, `$inc`, `$min` and
 * `$max` on plain paths are applied here (copying only the objects on the changed paths); anything
 * else goes to mingo's updater, so the result is always mingo's (test/unit/embedded-store.test.ts
 * compares them).
 */
import { update as mingoUpdate } from 'mingo/updater';
import type { Doc, Filter, Update } from '../../ports/store.ts';
import { copyJson } from '../embedded/json.ts';

/** A document as stored: the object and its JSON (what the database holds). */
export interface Stored {
  doc: Doc;
  json: string;
}

/**
 * Applies update operators to a copy of `doc`; undefined when nothing changed. `$setOnInsert`
 * only acts on upserts.
 */
export function applyUpdate(doc: Doc, update: Update, filter: Filter): Stored | undefined {
  const { $setOnInsert: _ignored, ...operators } = assertOperators(update);
  if (Object.keys(operators).length === 0) return undefined;
  const fast = simpleUpdate(doc, operators);
  if (fast !== FALL_BACK) return fast && { doc: fast, json: JSON.stringify(fast) };
  const working = copyJson(doc);
  // Only the positional `$` needs the filter, and handing it over costs mingo another compile.
  const positional = Object.values(operators).some((fields) => Object.keys(fields as object).some((f) => f.includes('.$')));
  const changed = mingoUpdate(working, operators, undefined, positional ? filter : undefined, { cloneMode: 'none' });
  return changed.length ? toStored(working) : undefined;
}

/**
 * The document an upsert inserts, as MongoDB builds it: the filter's equality fields, then the
 * update operators, then `$setOnInsert`. It must end up with a string `_id` (our rule).
 */
export function buildUpsert(filter: Filter, update: Update): Stored {
  const { $setOnInsert, ...operators } = assertOperators(update);
  // mingo refuses to touch `_id` (it is immutable on updates), so it is placed first, by hand.
  const { _id: filterId, ...equalities } = equalityFields(filter);
  const { _id: insertId, ...onInsert } = ($setOnInsert ?? {}) as Record<string, unknown>;
  const id = insertId ?? filterId;
  if (typeof id !== 'string') throw new Error('upsert needs a string _id in the filter or in $setOnInsert');
  const doc: Doc = { _id: id };
  if (Object.keys(equalities).length) mingoUpdate(doc, { $set: equalities }, undefined, undefined, { cloneMode: 'none' });
  if (Object.keys(operators).length) mingoUpdate(doc, operators, undefined, undefined, { cloneMode: 'none' });
  if (Object.keys(onInsert).length) mingoUpdate(doc, { $set: onInsert }, undefined, undefined, { cloneMode: 'none' });
  return toStored(doc);
}

/** The `field: value` and `field: {$eq: value}` conditions of a filter, including inside `$and`. */
function equalityFields(filter: Filter): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) {
      for (const clause of value) Object.assign(fields, equalityFields(clause as Filter));
    } else if (!key.startsWith('$') && !(value instanceof RegExp)) {
      if (!isOperatorObject(value)) fields[key] = value;
      else if (Object.keys(value).length === 1 && '$eq' in value) fields[key] = value.$eq;
    }
  }
  return fields;
}

function isOperatorObject(value: unknown): value is Record<string, unknown> {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return false;
  const keys = Object.keys(value);
  return keys.length > 0 && keys.every((key) => key.startsWith('$'));
}

function assertOperators(update: Update): Update {
  const keys = Object.keys(update);
  if (keys.length === 0 || !keys.every((key) => key.startsWith('$'))) {
    throw new Error('update document must contain only update operators ($set, $inc, ...)');
  }
  return update;
}

/** The stored form of a caller's document: a JSON round trip, i.e. exactly what replay yields. */
export function toStored(doc: Doc): Stored {
  const json = JSON.stringify(doc);
  return { doc: JSON.parse(json) as Doc, json };
}

// ---- updates without mingo ---------------------------------------------------------------------

const FALL_BACK = Symbol('fall back to mingo');
const SIMPLE_OPERATORS = new Set(['$set', '$unset', '$inc', '$min', '$max']);

/**
 * `$set`, `$unset`, `$inc`, `$min` and `$max` applied as mingo's updater applies them, for the
 * cases where that is plain: every path is a plain dotted path (not `_id`, no two overlapping),
 * every object on the way is a plain object or missing (created, as mingo does), `$set` values
 * are JSON values, `$inc` adds a finite number to a number or to nothing, and `$min`/`$max`
 * compare a string with a string or a number with a number (or find nothing). Returns the new
 * version of the document, already a JSON round trip (copies only the objects on the changed
 * paths; the rest is shared with `doc`), undefined when nothing changed (mingo's "no modified
 * field"), or FALL_BACK for anything else, which mingo then does as before (including throwing).
 */
function simpleUpdate(doc: Doc, operators: Update): Doc | undefined | typeof FALL_BACK {
  // In mingo's order: operator by operator, field by field.
  const steps: { operator: string; path: string; parts: string[]; operand: unknown }[] = [];
  for (const operator of Object.keys(operators)) {
    const fields = operators[operator];
    if (!SIMPLE_OPERATORS.has(operator) || !isPlainObject(fields)) return FALL_BACK;
    for (const path of Object.keys(fields)) {
      const parts = plainPathParts(path);
      if (!parts || parts[0] === '_id') return FALL_BACK;
      // mingo refuses two paths where one is, or contains, the other.
      for (const step of steps) if (overlaps(step.path, path)) return FALL_BACK;
      steps.push({ operator, path, parts, operand: fields[path] });
    }
  }

  // mingo's updater acts only inside what its typeOf calls an object, which an own `constructor`
  // key can change: leave such documents to mingo.
  if (Object.hasOwn(doc, 'constructor')) return FALL_BACK;
  const root: Record<string, unknown> = { ...doc };
  const fresh = new Set<object>([root]);
  let changed = false;
  for (const { operator, parts, operand } of steps) {
    const last = parts.length - 1;
    const leaf = parts[last];
    // Find (or, except for $unset, create) the parent object, copying the stored ones on the way.
    let parent: Record<string, unknown> | undefined = root;
    for (let i = 0; i < last; i++) {
      const part = parts[i];
      let child = parent[part];
      if (child === undefined) {
        if (operator === '$unset') {
          parent = undefined;
          break;
        }
        child = {};
      } else if (!isPlainObject(child) || Object.hasOwn(child, 'constructor')) {
        return FALL_BACK; // an array, null or a scalar on the way: mingo's rules
      } else if (!fresh.has(child)) {
        child = { ...child };
      }
      fresh.add(child as object);
      parent[part] = child;
      parent = child as Record<string, unknown>;
    }
    if (!parent) continue;
    const current = parent[leaf];
    let next: unknown;
    switch (operator) {
      case '$set': {
        const value = jsonCopy(operand);
        if (value === FALL_BACK) return FALL_BACK;
        if (jsonEqual(current, value)) continue;
        next = value;
        break;
      }
      case '$unset':
        if (current === undefined) continue;
        delete parent[leaf];
        changed = true;
        continue;
      case '$inc': {
        if (typeof operand !== 'number' || !Number.isFinite(operand)) return FALL_BACK;
        if (current !== undefined && typeof current !== 'number') return FALL_BACK;
        next = ((current as number | undefined) || 0) + operand;
        if (!Number.isFinite(next)) return FALL_BACK;
        if (next === current) continue;
        break;
      }
      case '$min':
      case '$max': {
        if (!(typeof operand === 'string' || (typeof operand === 'number' && Number.isFinite(operand)))) return FALL_BACK;
        if (current !== undefined) {
          if (typeof current !== typeof operand) return FALL_BACK;
          const value = current as string | number;
          const keep = operator === '$min' ? value <= operand : value >= operand;
          if (keep) continue;
        }
        next = operand === 0 ? 0 : operand; // -0 is 0 in JSON
        break;
      }
    }
    parent[leaf] = next;
    changed = true;
  }
  return changed ? (root as Doc) : undefined;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** The JSON text of `value` when JSON says it exactly (see jsonCopy), else undefined. */
export function exactJson(value: unknown): string | undefined {
  const copy = jsonCopy(value);
  return copy === FALL_BACK ? undefined : JSON.stringify(copy);
}

/**
 * A copy of `value` that is its own JSON round trip, or FALL_BACK when the round trip would
 * change it (undefined, NaN, Infinity, Dates and other objects, holes, `__proto__` keys, toJSON).
 */
function jsonCopy(value: unknown): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? (value === 0 ? 0 : value) : FALL_BACK;
    case 'object': {
      if (value === null) return null;
      if (Array.isArray(value)) {
        if (Object.getPrototypeOf(value) !== Array.prototype) return FALL_BACK;
        const out: unknown[] = [];
        for (let i = 0; i < value.length; i++) {
          if (!(i in value)) return FALL_BACK;
          const item = jsonCopy(value[i]);
          if (item === FALL_BACK) return FALL_BACK;
          out.push(item);
        }
        return out;
      }
      if (!isPlainObject(value) || Object.getOwnPropertySymbols(value).length) return FALL_BACK;
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        // mingo's isEqual reads `constructor`; JSON.stringify calls toJSON; `__proto__` is special.
        if (key === '__proto__' || key === 'constructor' || key === 'toJSON') return FALL_BACK;
        const item = jsonCopy(value[key]);
        if (item === FALL_BACK) return FALL_BACK;
        out[key] = item;
      }
      return out;
    }
    default:
      return FALL_BACK;
  }
}

/** mingo's isEqual on JSON values: key order does not matter, array order does. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => jsonEqual(item, other[i]));
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && jsonEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
}

/** The parts of a plain path (see isPlainPath), or undefined. */
export function plainPathParts(path: string): string[] | undefined {
  if (path.length === 0 || path.includes('$')) return undefined;
  const parts = path.split('.');
  for (const part of parts) {
    if (part.length === 0 || part in Object.prototype) return undefined;
  }
  return parts;
}

/** Whether one path is the other or lies inside it (`a` and `a.b`, not `a` and `ab`). */
function overlaps(a: string, b: string): boolean {
  if (a.length > b.length) return overlaps(b, a);
  return b.startsWith(a) && (b.length === a.length || b[a.length] === '.');
}
