/**
 * MongoDB query filters compiled to SQLite expressions over a JSONB column `doc`, in three-valued
 * logic: an expression is 1 where the document certainly matches, 0 where it certainly does not,
 * and NULL where only mingo can tell (an array on a path, a comparison across types, an operator
 * outside the subset). SQL's own AND, OR and NOT are exactly the combination rules of three-valued
 * answers (FALSE AND NULL is FALSE, TRUE OR NULL is TRUE), so `$and`, `$or` and `$not` compile to
 * them. The store keeps rows whose answer is not 0 and asks mingo about the NULL ones, so its
 * answer is always mingo's; on documents of the usual shape no row needs mingo.
 *
 * The subset and its rules are those of adapters/embedded/store-match.ts, which does the same in
 * JavaScript for the rows that come back undecided; test/unit/sqlite-filter.test.ts compares both
 * with mingo over random documents and filters.
 *
 * Besides the three-valued expression, a filter yields `index` terms: plain equalities on indexed
 * top-level fields and on `_id`, on the columns that hold them (store.ts), which the indexes are
 * declared on, so that SQLite's planner can use them. They select a superset of the matches
 * because the store refuses an array or object in an indexed field (see store.ts), which is the
 * only way a document could match `{field: value}` without holding that very value there.
 */
import type { DatabaseSync } from 'node:sqlite';
import type { Filter } from '../../ports/store.ts';

export type SqlValue = string | number | Uint8Array | null;

/** A statement's parameters, numbered (`?1`, `?2`, ...) so that one can appear twice. */
export class SqlParams {
  readonly values: SqlValue[] = [];

  /** The placeholder of a new parameter holding `value`. */
  add(value: SqlValue): string {
    return `?${this.values.push(value)}`;
  }
}

export interface CompiledSql {
  /** The three-valued expression (1 match, 0 no match, NULL undecided). */
  expr: string;
  /** Index-usable terms (each a boolean SQL term), to be ANDed with `expr`. */
  index: string[];
  /** How many parameters the index terms use: the first ones (they are compiled before `expr`). */
  indexParams: number;
}

const UNDECIDED = 'NULL';

/** The JSON path literal of a dotted field (`'$.a."b-c"'`), or undefined for one SQL cannot name. */
export function jsonPathLiteral(path: string): string | undefined {
  return jsonPath(path.split('.'));
}

/** The SQL expression of a document's value at a JSON path (what a column of an indexed field is filled from). */
export function fieldSql(path: string): string | undefined {
  const literal = jsonPath(path.split('.'));
  return literal && `json_extract(doc, ${literal})`;
}

/**
 * How the column of an indexed field holds a boolean: a one-byte BLOB (false 0, true 1), always
 * these two instances. SQLite sorts BLOBs after numbers and text, as MongoDB sorts booleans after
 * them, and no BLOB equals a number, so an equality with a boolean is an exact index term
 * (`{projectId, subscribed: false}`: the Contacts screen's filter).
 */
export const BOOLEAN_COLUMN = { true: new Uint8Array([1]), false: new Uint8Array([0]) } as const;

/** The SQL that fills a column from the document (for documents written before the column existed). */
export function columnSql(path: string): string | undefined {
  const literal = jsonPath(path.split('.'));
  return literal && `CASE json_type(doc, ${literal}) WHEN 'true' THEN x'01' WHEN 'false' THEN x'00' ELSE json_extract(doc, ${literal}) END`;
}

/** A value an indexed field can hold and an index term can name: a string or a finite number. */
export function isIndexValue(value: unknown): value is string | number {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/**
 * Compiles `filter`. `indexed` maps the top-level fields that some index of the collection covers
 * to the column that holds each (their values are only null, numbers and strings: store.ts refuses
 * anything else, and keeps the column equal to the field).
 */
export function compileSql(filter: Filter, indexed: ReadonlyMap<string, string>, params: SqlParams): CompiledSql {
  const { terms, exact } = indexTerms(filter, indexed, params);
  const indexParams = params.values.length;
  // What an index term answers exactly needs no second test in the expression.
  const rest = exact.size ? Object.fromEntries(Object.entries(filter).filter(([key]) => !exact.has(key))) : filter;
  const full = compileObject(rest, params, false, indexed);
  if (full === '1' || full === UNDECIDED) return { index: terms, indexParams, expr: full };
  // Most documents hold no array at all (`arrays` = 0, see store.ts): for them a simpler form,
  // which SQLite evaluates in about half the time, gives the same answer.
  const plain = compileObject(rest, params, true, indexed);
  return { index: terms, indexParams, expr: `(CASE WHEN arrays THEN ${full} ELSE ${plain} END)` };
}

/**
 * The index terms of a filter, and the fields they answer exactly: `_id` (the id column is the
 * document's `_id`), and equality with a string on an indexed field (json_extract gives a JSON
 * string as that text, and only an object or array could give other JSON text: arrays are
 * refused in indexed fields, and a value that looks like JSON is left to the expression).
 * Equality with a boolean is exact too (a column holds it as a BLOB, BOOLEAN_COLUMN); with a
 * number it only narrows.
 */
function indexTerms(filter: Filter, indexed: ReadonlyMap<string, string>, params: SqlParams): { terms: string[]; exact: Set<string> } {
  const terms: string[] = [];
  const exact = new Set<string>();
  for (const field of Object.keys(filter)) {
    const condition = filter[field];
    if (field === '$and') {
      // Every conjunct holds of a match, so each one's terms narrow the whole (none exactly: the
      // expression still tests the conjuncts). Without them SQLite tested every row: a campaign's
      // batch, whose cursor was once under an `$and`, walked every contact before the cursor.
      if (Array.isArray(condition)) for (const clause of condition) if (isPlainObject(clause)) terms.push(...indexTerms(clause, indexed, params).terms);
      continue;
    }
    if (field === '_id') {
      if (typeof condition === 'string') {
        terms.push(`id = ${params.add(condition)}`);
        exact.add(field);
      } else if (isPlainObject(condition) && Object.keys(condition).length === 1 && Array.isArray(condition.$in)) {
        const ids = condition.$in as unknown[];
        if (!ids.every((id) => isScalar(id) || id === null)) continue; // a RegExp in $in matches by pattern
        // Stored ids are strings; other values can never match, so they need no place here.
        const strings = ids.filter((id) => typeof id === 'string');
        terms.push(`id IN (SELECT value FROM json_each(${params.add(JSON.stringify(strings))}))`);
        exact.add(field);
      } else if (isPlainObject(condition) && Object.keys(condition).length > 0) {
        // A range of string ids (a cursor page): ids are strings, so it is exact on the id column.
        const ops = Object.entries(condition);
        if (!ops.every(([op, operand]) => op in ORDER_SQL && typeof operand === 'string')) continue;
        for (const [op, operand] of ops) terms.push(`id ${ORDER_SQL[op as keyof typeof ORDER_SQL]} ${params.add(operand as string)}`);
        exact.add(field);
      }
      continue;
    }
    const sql = indexed.get(field);
    if (!sql) continue;
    if (isPlainObject(condition) && Object.keys(condition).length > 0 && Object.keys(condition).every((op) => op in ORDER_SQL)) {
      // A range of strings or numbers: every match is in it (an indexed field holds only null,
      // numbers and strings, and numbers sort before strings); the expression decides the rest.
      for (const [op, operand] of Object.entries(condition)) {
        if (isIndexValue(operand)) terms.push(`${sql} ${ORDER_SQL[op as keyof typeof ORDER_SQL]} ${params.add(operand)}`);
      }
      continue;
    }
    if (isPlainObject(condition) && Object.keys(condition).length === 1 && Array.isArray(condition.$in)) {
      // A list of strings or numbers (statuses): its points in the index. With a null (which
      // matches a missing field) or anything else, the expression alone decides.
      const values = condition.$in as unknown[];
      if (values.length === 0 || !values.every(isIndexValue)) continue;
      terms.push(`${sql} IN (SELECT value FROM json_each(${params.add(JSON.stringify(values))}))`);
      continue;
    }
    const value = isPlainObject(condition) && Object.keys(condition).length === 1 && '$eq' in condition ? condition.$eq : condition;
    if (typeof value === 'boolean') {
      // Only a boolean equals a boolean (an array could hold one too, but indexed fields hold none).
      terms.push(`${sql} = ${params.add(BOOLEAN_COLUMN[`${value}`])}`);
      exact.add(field);
      continue;
    }
    if (!isIndexValue(value)) continue;
    terms.push(`${sql} = ${params.add(value)}`);
    if (typeof value === 'string' && valueAlone(value)) exact.add(field);
  }
  return { terms, exact };
}

/** `plain`: for documents known to hold no array (see Field.plain). */
function compileObject(filter: Filter, params: SqlParams, plain: boolean, indexed: ReadonlyMap<string, string>): string {
  if (!isPlainObject(filter)) return UNDECIDED;
  const parts: string[] = [];
  for (const key of Object.keys(filter)) {
    const value = filter[key];
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0) return UNDECIDED;
      const clauses = value.map((clause) => compileObject(clause as Filter, params, plain, indexed));
      parts.push(`(${clauses.join(key === '$and' ? ' AND ' : ' OR ')})`);
    } else if (key.startsWith('$')) {
      parts.push(UNDECIDED);
    } else {
      parts.push(compileField(key, value, params, plain, indexed.get(key)));
    }
  }
  if (parts.length === 0) return '1';
  return parts.length === 1 ? parts[0] : `(${parts.join(' AND ')})`;
}

/**
 * A JSON path literal for SQLite (`'$.a."b-c"'`), or undefined for paths the subset leaves to
 * mingo: empty parts, `$`, numeric parts (array positions), names Object.prototype has, and
 * names a quoted label cannot hold.
 */
function jsonPath(parts: string[]): string | undefined {
  let path = '$';
  for (const part of parts) {
    if (part.length === 0 || part.includes('$') || part in Object.prototype || /^\d+$/.test(part)) return undefined;
    if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(part)) path += `.${part}`;
    else if (/["\\\u0000-\u001f]/.test(part)) return undefined;
    else path += `."${part}"`;
  }
  return `'${path.replace(/'/g, "''")}'`;
}

/** How one path resolves: its type expression and value expression, and the array guard. */
interface Field {
  /** '' when missing (or a non-object on the way), else SQLite's json_type name. */
  type: string;
  /** json_type itself: NULL when missing. */
  typeOrNull: string;
  value: string;
  /**
   * The document holds no array anywhere: no array rules apply, and json_extract's value alone
   * tells the answer for the common conditions (equality with a string that does not look like
   * JSON, or with a number other than 0 and 1, which booleans share).
   */
  plain: boolean;
  /** The answer for a missing value, turned to NULL when an array on the way hides the value. */
  missing(answer: string): string;
}

/**
 * `column`: the column of an indexed top-level field, which holds its value when it is a string,
 * a number or a boolean (store.ts) and is read without walking the document; the document is asked
 * only where the column is NULL (the field null or missing).
 */
function field(path: string, plain: boolean, column?: string): Field | undefined {
  if (path.includes('$')) return undefined;
  const parts = path.split('.');
  const literal = jsonPath(parts);
  if (!literal) return undefined;
  const prefixes: string[] = [];
  for (let i = 1; i < parts.length; i++) prefixes.push(`json_type(doc, ${jsonPath(parts.slice(0, i))}) = 'array'`);
  // A boolean's column holds a BLOB (BOOLEAN_COLUMN): read back as json_type and json_extract give it.
  const typeOrNull = column
    ? `(CASE WHEN ${column} IS NULL THEN json_type(doc, ${literal}) WHEN ${column} = x'01' THEN 'true' WHEN ${column} = x'00' THEN 'false' ELSE typeof(${column}) END)`
    : `json_type(doc, ${literal})`;
  return {
    type: `ifnull(${typeOrNull}, '')`,
    typeOrNull,
    value: column ? `(CASE ${column} WHEN x'01' THEN 1 WHEN x'00' THEN 0 ELSE ${column} END)` : `json_extract(doc, ${literal})`,
    plain,
    // A path through an array resolves to nothing in SQLite; MongoDB looks inside the array.
    // `arrays` is 0 for a document that holds no array at all (store.ts): no path to check then.
    missing: (answer) => (plain || !prefixes.length ? answer : `CASE WHEN ${prefixes.join(' OR ')} THEN NULL ELSE ${answer} END`),
  };
}

function compileField(path: string, condition: unknown, params: SqlParams, plain: boolean, column: string | undefined): string {
  const f = field(path, plain, column);
  if (!f) return UNDECIDED;
  const test = compileCondition(f, condition, params);
  return test ?? UNDECIDED;
}

/**
 * One field's condition as a CASE over the value's type. Every CASE answers NULL for an array
 * (MongoDB's array rules) and asks `missing` for an absent value.
 */
function compileCondition(f: Field, condition: unknown, params: SqlParams): string | undefined {
  if (isScalar(condition) || condition === null) return equals(f, condition, params);
  if (!isPlainObject(condition)) return undefined;
  const keys = Object.keys(condition);
  if (keys.length === 0 || !keys.every((k) => k.startsWith('$'))) return undefined;
  const tests: string[] = [];
  for (const key of keys) {
    const operand = condition[key];
    let test: string | undefined;
    switch (key) {
      case '$eq':
        test = isScalar(operand) || operand === null ? equals(f, operand, params) : undefined;
        break;
      case '$ne': {
        const eq = isScalar(operand) || operand === null ? equals(f, operand, params) : undefined;
        test = eq && `(NOT ${eq})`;
        break;
      }
      case '$in':
        test = Array.isArray(operand) && operand.every((o) => isScalar(o) || o === null) ? oneOf(f, operand as (Scalar | null)[], params) : undefined;
        break;
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        test = order(f, key, operand, params);
        break;
      case '$exists':
        if (typeof operand !== 'boolean') break;
        test = f.plain ? `(${f.typeOrNull} IS ${operand ? 'NOT ' : ''}NULL)` : byType(f, { present: operand ? '1' : '0', missing: operand ? '0' : '1' });
        break;
      case '$regex':
        test = regex(f, operand, condition.$options, params);
        break;
      case '$options':
        test = '$regex' in condition ? '1' : undefined;
        break;
      case '$not': {
        const inner = compileCondition(f, operand, params);
        test = inner && `(NOT ${inner})`;
        break;
      }
    }
    tests.push(test ?? UNDECIDED);
  }
  return tests.length === 1 ? tests[0] : `(${tests.join(' AND ')})`;
}

type Scalar = string | number | boolean;

/**
 * CASE over the value's type: `cases` maps json_type names to answers, `present` answers any other
 * non-array type, `missing` an absent value. Arrays are always NULL.
 */
function byType(f: Field, answers: { cases?: Record<string, string>; present: string; missing: string }): string {
  const whens = Object.entries(answers.cases ?? {}).map(([type, answer]) => `WHEN '${type}' THEN ${answer}`);
  return `(CASE ${f.type} ${whens.join(' ')} WHEN 'array' THEN NULL WHEN '' THEN ${f.missing(answers.missing)} ELSE ${answers.present} END)`;
}

/** Equality with a scalar (same type and value) or with null (null or missing). */
function equals(f: Field, operand: Scalar | null, params: SqlParams): string {
  if (f.plain) {
    if (operand === null) return `(ifnull(${f.typeOrNull}, 'null') = 'null')`;
    if (typeof operand === 'boolean') return `ifnull(${f.typeOrNull} = '${operand}', 0)`;
    if (valueAlone(operand)) return `ifnull(${f.value} = ${params.add(operand)}, 0)`;
  }
  if (operand === null) return byType(f, { cases: { null: '1' }, present: '0', missing: '1' });
  if (typeof operand === 'boolean') return byType(f, { cases: { [String(operand)]: '1' }, present: '0', missing: '0' });
  const test = `${f.value} = ${params.add(operand)}`;
  const types: Record<string, string> = typeof operand === 'string' ? { text: test } : { integer: test, real: test };
  return byType(f, { cases: types, present: '0', missing: '0' });
}

function oneOf(f: Field, operands: (Scalar | null)[], params: SqlParams): string {
  if (f.plain && operands.length > 0 && operands.every(valueAlone) && new Set(operands.map((o) => typeof o)).size === 1) {
    return `ifnull(${f.value} IN (SELECT value FROM json_each(${params.add(JSON.stringify(operands))})), 0)`;
  }
  const strings = operands.filter((o) => typeof o === 'string');
  const numbers = operands.filter((o) => typeof o === 'number');
  const withNull = operands.includes(null);
  const inList = (values: SqlValue[]) => `${f.value} IN (SELECT value FROM json_each(${params.add(JSON.stringify(values))}))`;
  const cases: Record<string, string> = {
    true: operands.includes(true) ? '1' : '0',
    false: operands.includes(false) ? '1' : '0',
    null: withNull ? '1' : '0',
  };
  if (strings.length) cases.text = inList(strings);
  if (numbers.length) cases.integer = cases.real = inList(numbers);
  return byType(f, { cases, present: '0', missing: withNull ? '1' : '0' });
}

const ORDER_SQL = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' } as const;

/**
 * `$gt` and friends between two strings or two numbers; a missing field never compares, and any
 * other type is left to mingo (MongoDB's cross-type rules). Strings compare as SQLite's BINARY
 * collation does (UTF-8 bytes), which is JavaScript's order except between characters above
 * U+FFFF and those from U+E000 to U+FFFF.
 */
function order(f: Field, op: keyof typeof ORDER_SQL, operand: unknown, params: SqlParams): string | undefined {
  const isString = typeof operand === 'string';
  if (!isString && !(typeof operand === 'number' && Number.isFinite(operand))) return undefined;
  const test = `${f.value} ${ORDER_SQL[op]} ${params.add(operand as SqlValue)}`;
  const cases: Record<string, string> = isString ? { text: test } : { integer: test, real: test };
  return byType(f, { cases, present: UNDECIDED, missing: '0' });
}

/**
 * `$regex`: a pattern that is plain text (every special character escaped, as a "contains" search
 * builds it) is `instr` in SQLite; any other through the `mongo_regex(pattern, flags, value)`
 * function the store registers (registerRegex), which calls into JavaScript for every row.
 */
function regex(f: Field, pattern: unknown, options: unknown, params: SqlParams): string | undefined {
  if (typeof pattern !== 'string' || (options !== undefined && (typeof options !== 'string' || !/^[imsu]*$/.test(options)))) return undefined;
  const flags = (options as string | undefined) ?? '';
  try {
    new RegExp(pattern, flags);
  } catch {
    return undefined; // mingo reports it
  }
  const text = plainText(pattern, flags);
  const call =
    text === undefined
      ? `mongo_regex(${params.add(pattern)}, ${params.add(flags)}, ${f.value})`
      : flags.includes('i')
        ? `instr(lower(${f.value}), ${params.add(text.toLowerCase())}) > 0`
        : `instr(${f.value}, ${params.add(text)}) > 0`;
  return byType(f, { cases: { text: call }, present: UNDECIDED, missing: '0' });
}

const REGEX_SYNTAX = '\\^$.*+?()[]{}|/';

/**
 * The text a pattern matches as it is, when `instr` finds exactly what the regular expression
 * would: printable ASCII only, each of `\^$.*+?()[]{}|/` escaped and nothing else. SQLite's
 * lower() folds A-Z only, which is what JavaScript's case-insensitive match does for ASCII text
 * without the `u` flag (no other character folds to an ASCII one); with `u` it folds more (the
 * Kelvin sign to k), so `iu` stays with mingo_regex.
 */
function plainText(pattern: string, flags: string): string | undefined {
  if (flags.includes('i') && flags.includes('u')) return undefined;
  let text = '';
  for (let i = 0; i < pattern.length; i++) {
    let c = pattern[i];
    if (c < ' ' || c > '~') return undefined;
    if (c === '\\') {
      c = pattern[++i];
      if (c === undefined || !REGEX_SYNTAX.includes(c)) return undefined;
    } else if (REGEX_SYNTAX.includes(c)) {
      return undefined;
    }
    text += c;
  }
  return text;
}

/** Registers `mongo_regex(pattern, flags, value)` (1 or 0), the `$regex` of compiled filters, on a connection. */
export function registerRegex(sqlite: DatabaseSync): void {
  const regexes = new Map<string, RegExp>();
  sqlite.function('mongo_regex', { deterministic: true }, (pattern, flags, value) => {
    const key = `${flags}/${pattern}`;
    let re = regexes.get(key);
    if (!re) {
      if (regexes.size > 1000) regexes.clear();
      regexes.set(key, (re = new RegExp(String(pattern), String(flags))));
    }
    return re.test(String(value)) ? 1 : 0;
  });
}

/**
 * Whether `json_extract(...) = operand` alone is exact on a document without arrays: a string that
 * an object's JSON text cannot equal, or a number no boolean (1/0 in SQLite) equals.
 */
function valueAlone(operand: unknown): operand is string | number {
  if (typeof operand === 'string') return !/^\s*[[{]/.test(operand);
  return typeof operand === 'number' && Number.isFinite(operand) && operand !== 0 && operand !== 1;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

export function isScalar(v: unknown): v is Scalar {
  return typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));
}
