/**
 * The template engine: `{{name}}` and `{{ name ?? fallback }}` substitution. Pure and total:
 * no I/O, never throws on any input, never evaluates anything (no eval, no Function, no
 * expressions) and never reaches a prototype or runs a getter: a variable is read only when it
 * is an own data property of the variables object (or of a plain object along a dotted path).
 *
 * Syntax (see docs/decisions.md, "Templates"):
 * - A tag is `{{`, optional whitespace, a name of `[A-Za-z0-9_.-]+`, optional whitespace, an
 *   optional `?? fallback`, optional whitespace, `}}`.
 * - The fallback is bare text (trimmed; no `{`, `}`, CR or LF; may be empty) or quoted with
 *   '…' or "…" (anything but that quote, including braces).
 * - Anything that does not parse as a tag is literal text, left exactly as written. Tags are
 *   found left to right in one pass, so `{{{name}}}` is a literal `{`, the tag, a literal `}`,
 *   and an inserted value is never read as template text again.
 * - A value is "missing" when it is absent, null, undefined, the empty string, or not a scalar
 *   (objects, arrays, functions): then the fallback is used, or nothing when there is none.
 *   Numbers, booleans and bigints render with String(); a Date as its ISO 8601 form.
 * - `html` mode HTML-escapes every inserted value, fallbacks included (& < > " '); the
 *   template's own markup is untouched. `text` mode (subjects, plain text) escapes nothing but
 *   turns each line break in an inserted value into one space, so a value can never start a
 *   new header line.
 */

export type RenderMode = 'html' | 'text';

/** Variables offered to a template: names to values; only own data properties are read. */
export type TemplateVars = Readonly<Record<string, unknown>>;

export interface TemplateTag {
  /** The variable name as written, e.g. `firstName` or `company.name`. */
  name: string;
  /** The fallback text, unquoted (bare text trimmed); null when the tag has no `??`. */
  fallback: string | null;
  /** The tag exactly as written in the source. */
  raw: string;
}

export type TemplateSegment = string | TemplateTag;

/** The variables every template may use; the caller supplies them and they win over data keys. */
export const SYSTEM_VARIABLES = ['id', 'email', 'unsubscribeUrl', 'subscribeUrl', 'manageUrl'] as const;
export type SystemVariableName = (typeof SYSTEM_VARIABLES)[number];
export type SystemVariables = Partial<Record<SystemVariableName, string | null>>;

const isNameChar = (c: number) =>
  (c >= 0x61 && c <= 0x7a) || // a-z
  (c >= 0x41 && c <= 0x5a) || // A-Z
  (c >= 0x30 && c <= 0x39) || // 0-9
  c === 0x5f || // _
  c === 0x2e || // .
  c === 0x2d; // -

/** Whitespace inside the braces: space, tab, CR, LF, vertical tab, form feed. */
const isSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);

/**
 * Splits a template into literal text and tags. Linear in the length of the source: the bare
 * fallback scan stops at the next brace, and the quote search remembers its last answer, so a
 * source full of unterminated tags is not scanned again and again.
 */
export function parseTemplate(source: string): TemplateSegment[] {
  const segments: TemplateSegment[] = [];
  const quoteCache = new Map<string, { from: number; at: number }>();
  /** First index ≥ from of quote `q`, or -1; tag attempts move left to right, so answers are reused. */
  const nextQuote = (q: string, from: number): number => {
    const cached = quoteCache.get(q);
    if (cached && from >= cached.from && (cached.at === -1 || from <= cached.at)) return cached.at;
    const at = source.indexOf(q, from);
    quoteCache.set(q, { from, at });
    return at;
  };

  const tagAt = (start: number): { tag: TemplateTag; end: number } | null => {
    let k = start + 2;
    const n = source.length;
    while (k < n && isSpace(source.charCodeAt(k))) k++;
    const nameStart = k;
    while (k < n && isNameChar(source.charCodeAt(k))) k++;
    if (k === nameStart) return null;
    const name = source.slice(nameStart, k);
    while (k < n && isSpace(source.charCodeAt(k))) k++;
    let fallback: string | null = null;
    if (source.startsWith('??', k)) {
      k += 2;
      while (k < n && isSpace(source.charCodeAt(k))) k++;
      const c = source[k];
      if (c === "'" || c === '"') {
        const close = nextQuote(c, k + 1);
        if (close === -1) return null;
        fallback = source.slice(k + 1, close);
        k = close + 1;
        while (k < n && isSpace(source.charCodeAt(k))) k++;
      } else {
        const textStart = k;
        while (k < n && !'{}\r\n'.includes(source[k])) k++;
        fallback = source.slice(textStart, k).trim();
      }
    }
    if (!source.startsWith('}}', k)) return null;
    return { tag: { name, fallback, raw: source.slice(start, k + 2) }, end: k + 2 };
  };

  let literalStart = 0;
  let from = 0;
  for (;;) {
    const open = source.indexOf('{{', from);
    if (open === -1) break;
    const found = tagAt(open);
    if (!found) {
      from = open + 1;
      continue;
    }
    if (open > literalStart) segments.push(source.slice(literalStart, open));
    segments.push(found.tag);
    literalStart = from = found.end;
  }
  if (literalStart < source.length) segments.push(source.slice(literalStart));
  return segments;
}

/** The distinct variable names a template uses, in order of first use. */
export function templateVariables(source: string): string[] {
  const names = new Set<string>();
  for (const segment of parseTemplate(source)) if (typeof segment !== 'string') names.add(segment.name);
  return [...names];
}

/** Renders a template with `vars` (see the module comment for every rule). */
export function renderTemplate(source: string, vars: TemplateVars, mode: RenderMode): string {
  let out = '';
  for (const segment of parseTemplate(source)) {
    if (typeof segment === 'string') {
      out += segment;
      continue;
    }
    const inserted = tagText(segment, vars);
    out += mode === 'html' ? escapeHtml(inserted) : singleLine(inserted);
  }
  return out;
}

/** What a tag puts in, before escaping: the variable's text, or the fallback when it is missing or empty. */
export function tagText(tag: TemplateTag, vars: TemplateVars): string {
  const value = scalarText(lookup(vars, tag.name));
  return value === undefined || value === '' ? (tag.fallback ?? '') : value;
}

/**
 * The variables of one message: the recipient's data, then the system variables on top, so a
 * data key named like a system variable never replaces the real link. The result has no
 * prototype. Only own enumerable data properties of `data` are copied.
 */
export function templateScope(data: TemplateVars | null | undefined, system: SystemVariables): Record<string, unknown> {
  const scope: Record<string, unknown> = Object.create(null);
  if (data) {
    for (const key of Object.keys(data)) {
      const d = Object.getOwnPropertyDescriptor(data, key);
      if (d && 'value' in d) scope[key] = d.value;
    }
  }
  for (const name of SYSTEM_VARIABLES) {
    const d = Object.getOwnPropertyDescriptor(system, name);
    if (d && 'value' in d && d.value !== undefined) scope[name] = d.value;
  }
  return scope;
}

/** An own data property, never an inherited one, and never through a getter. */
function own(obj: unknown, key: string): unknown {
  if (obj === null || typeof obj !== 'object') return undefined;
  const d = Object.getOwnPropertyDescriptor(obj, key);
  return d && 'value' in d ? d.value : undefined;
}

const isPlainObject = (v: unknown): v is object => {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/** A flat key first (data keys may contain dots), then a path through plain objects. */
function lookup(vars: TemplateVars, name: string): unknown {
  const flat = own(vars, name);
  if (flat !== undefined || !name.includes('.')) return flat;
  let current: unknown = vars;
  for (const part of name.split('.')) {
    if (!isPlainObject(current) && current !== vars) return undefined;
    current = own(current, part);
    if (current === undefined) return undefined;
  }
  return current;
}

/** The text of a scalar value; undefined for anything that counts as missing. */
function scalarText(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'object':
      if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString();
      return undefined;
    default:
      return undefined;
  }
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]);

/** Line breaks (CRLF, CR, LF, NEL, LS, PS) become one space each. */
const singleLine = (s: string): string => s.replace(/\r\n|[\r\n\u0085\u2028\u2029]/g, ' ');
