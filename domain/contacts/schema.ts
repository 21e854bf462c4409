import { z } from 'zod';
import { LIMITS } from '../limits.ts';

/** Emails are compared case-insensitively: stored trimmed and lower-cased. */
export const emailSchema = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.email({ message: 'Invalid email address' }).max(LIMITS.email))
  // The pipe hides the format from the input JSON Schema; say it for the OpenAPI document.
  .meta({ format: 'email', maxLength: LIMITS.email });

/** Set by the service; never writable through `data`. */
export const MANAGED_KEYS = ['email', 'createdAt', 'updatedAt', 'subscribed'] as const;

export const MAX_DATA_KEYS = LIMITS.data.keysPerRequest;
export const MAX_KEY_LENGTH = LIMITS.data.keyLength;
export const MAX_STRING_VALUE = LIMITS.data.stringValue;

export const simpleValue = z.union([z.string().max(MAX_STRING_VALUE), z.number(), z.boolean()]);
export type SimpleValue = z.infer<typeof simpleValue>;

export type DataType = 'string' | 'number' | 'boolean' | 'date';

const ISO_DATE = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The spec's inference: JSON type, with ISO 8601 timestamp strings as dates. */
export function inferType(value: SimpleValue): DataType {
  if (typeof value === 'number') return 'number';
  if (typeof value === 'boolean') return 'boolean';
  return ISO_DATE.test(value) && !Number.isNaN(Date.parse(value)) ? 'date' : 'string';
}

/** `null` removes a key from the contact. */
const storedValue = z.union([simpleValue, z.null()]);

const nonPersistent = z.strictObject({ value: simpleValue, persistent: z.boolean() });

function checkKeys(data: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const keys = Object.keys(data);
  if (keys.length > MAX_DATA_KEYS) {
    ctx.addIssue({ code: 'custom', message: `At most ${MAX_DATA_KEYS} keys per request`, path: [] });
  }
  for (const key of keys) {
    if ((MANAGED_KEYS as readonly string[]).includes(key)) {
      ctx.addIssue({ code: 'custom', message: `"${key}" is managed by the service and cannot be set through data`, path: [key] });
    } else if (key.length === 0 || key.length > MAX_KEY_LENGTH || key.includes('.') || key.startsWith('$')) {
      ctx.addIssue({ code: 'custom', message: `Keys are 1-${MAX_KEY_LENGTH} characters, without "." or a leading "$"`, path: [key] });
    }
  }
  const locale = data.locale;
  const localeValue = locale && typeof locale === 'object' ? (locale as { value?: unknown }).value : locale;
  if (localeValue !== undefined && localeValue !== null && !(typeof localeValue === 'string' && /^[A-Za-z]{2}$/.test(localeValue))) {
    ctx.addIssue({ code: 'custom', message: 'locale must be an ISO 639-1 language code such as "en"', path: ['locale'] });
  }
}

const lowerLocale = <T extends Record<string, unknown>>(data: T): T =>
  typeof data.locale === 'string' ? { ...data, locale: data.locale.toLowerCase() } : data;

/** What checkKeys enforces, as JSON Schema for the OpenAPI document. */
const dataKeysMeta = {
  maxProperties: MAX_DATA_KEYS,
  propertyNames: { minLength: 1, maxLength: MAX_KEY_LENGTH, pattern: '^[^.$][^.]*$', not: { enum: [...MANAGED_KEYS] } },
};

/** `data` on contacts: simple values, merged into what the contact has. */
export const contactDataSchema = z
  .record(z.string(), storedValue)
  .superRefine(checkKeys)
  .transform(lowerLocale)
  .meta(dataKeysMeta)
  .describe('Custom fields: string, number, boolean (ISO 8601 strings are dates); null removes a key');
export type ContactData = Record<string, SimpleValue | null>;

/** `data` on /v1/send and /v1/track: simple values, or `{value, persistent:false}` for this call only. */
export const callDataSchema = z
  .record(z.string(), z.union([storedValue, nonPersistent]))
  .superRefine(checkKeys)
  .meta(dataKeysMeta)
  .describe('Simple values are saved to the contact; {value, persistent:false} is used for this call only');
export type CallData = z.infer<typeof callDataSchema>;

/** Splits call data into what is saved on the contact and what lives only for this call. */
export function splitCallData(data: CallData | undefined): { persistent: ContactData; transient: Record<string, SimpleValue> } {
  const persistent: ContactData = {};
  const transient: Record<string, SimpleValue> = {};
  for (const [key, value] of Object.entries(data ?? {})) {
    if (value !== null && typeof value === 'object') {
      if (value.persistent === false) transient[key] = value.value;
      else persistent[key] = value.value;
    } else {
      persistent[key] = value;
    }
  }
  return { persistent: lowerLocale(persistent), transient };
}

export const contactSchema = z.object({
  id: z.string(),
  email: z.string(),
  subscribed: z.boolean(),
  data: z.record(z.string(), simpleValue),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Contact = z.infer<typeof contactSchema>;

/** POST /contacts: create, or merge into the contact with this email. */
export const newContactSchema = z.strictObject({ email: emailSchema, subscribed: z.boolean().optional(), data: contactDataSchema.optional() });

/** PATCH /contacts/:id: data is merged, null removes a key. */
export const contactPatchSchema = z.strictObject({ email: emailSchema.optional(), subscribed: z.boolean().optional(), data: contactDataSchema.optional() });
