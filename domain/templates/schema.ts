import { z } from 'zod';
import { emailSchema } from '../contacts/schema.ts';
import { LIMITS } from '../limits.ts';

/** Plain zod and limits only: the dashboard's template form validates with these schemas too. */
export const TEMPLATE_TYPES = ['TRANSACTIONAL', 'MARKETING'] as const;

export const MAX_NAME = LIMITS.name;
export const MAX_SUBJECT = LIMITS.subject;
/** 512 KB of UTF-8. */
export const MAX_BODY_BYTES = LIMITS.htmlBodyBytes;
export const MAX_DESCRIPTION = LIMITS.description;
export const MAX_FROM_NAME = LIMITS.name;

/** Bytes of UTF-8 (TextEncoder, not Buffer: the schema also runs in the browser). */
const utf8Bytes = (s: string) => new TextEncoder().encode(s).length;

const LINE_BREAK = /[\r\n\u0085\u2028\u2029]/;
const oneLine = (s: string) => !LINE_BREAK.test(s);

/**
 * A sender or reply-to address. The domain part is lower-cased (domains are case-insensitive
 * and the verified-domain check compares lower-case); the local part is kept as written.
 */
export const addressSchema = z
  .string()
  .trim()
  .max(LIMITS.email)
  .pipe(z.email({ message: 'Invalid email address' }))
  .transform((a) => {
    const at = a.lastIndexOf('@');
    return `${a.slice(0, at)}@${a.slice(at + 1).toLowerCase()}`;
  })
  .meta({ format: 'email', maxLength: LIMITS.email });

/** A template's and a campaign's content fields: one rule each, for both. */
export const nameSchema = z.string().trim().min(1, 'Name is required').max(MAX_NAME);

export const subjectSchema = z
  .string()
  .trim()
  .min(1, 'Subject is required')
  .max(MAX_SUBJECT)
  .refine(oneLine, 'Subject must be one line (no line breaks)')
  .describe('Supports {{variable}}; one line');

export const bodySchema = z
  .string()
  .check((ctx) => {
    if (ctx.value.trim() === '') {
      ctx.issues.push({ code: 'custom', message: 'Body is required', input: ctx.value });
    } else if (utf8Bytes(ctx.value) > MAX_BODY_BYTES) {
      ctx.issues.push({
        code: 'too_big',
        origin: 'string',
        maximum: MAX_BODY_BYTES,
        inclusive: true,
        message: `Body must be at most ${MAX_BODY_BYTES} bytes (512 KB of UTF-8)`,
        input: ctx.value,
      });
    }
  })
  .describe('HTML; supports {{variable}}; at most 512 KB of UTF-8');

export const fromNameSchema = z
  .string()
  .trim()
  .min(1, 'fromName must not be empty; send null to clear it')
  .max(MAX_FROM_NAME)
  .refine(oneLine, 'fromName must be one line (no line breaks)');

export const descriptionSchema = z.string().max(MAX_DESCRIPTION);
const typeSchema = z.enum(TEMPLATE_TYPES);

/** POST /templates. Absent and null optionals are both stored as null. */
export const createTemplateSchema = z.strictObject({
  name: nameSchema,
  subject: subjectSchema,
  body: bodySchema,
  from: addressSchema.describe('Sender address on a verified domain of the project'),
  fromName: fromNameSchema.nullable().optional(),
  replyTo: addressSchema.nullable().optional(),
  description: descriptionSchema.nullable().optional(),
  type: typeSchema.default('TRANSACTIONAL'),
});
export type CreateTemplateInput = z.output<typeof createTemplateSchema>;

/** PATCH /templates/:id: only given fields change; null clears an optional field; {} is refused. */
export const patchTemplateSchema = z
  .strictObject({
    name: nameSchema.optional(),
    subject: subjectSchema.optional(),
    body: bodySchema.optional(),
    from: addressSchema.optional(),
    fromName: fromNameSchema.nullable().optional(),
    replyTo: addressSchema.nullable().optional(),
    description: descriptionSchema.nullable().optional(),
    type: typeSchema.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'Give at least one field to change' });
export type PatchTemplateInput = z.output<typeof patchTemplateSchema>;

export const templateSchema = z.object({
  id: z.string(),
  name: z.string(),
  subject: z.string(),
  body: z.string(),
  from: z.string(),
  fromName: z.string().nullable(),
  replyTo: z.string().nullable(),
  description: z.string().nullable(),
  type: typeSchema,
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const listTemplatesQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  pageSize: z.coerce.number().int().min(1).max(100).default(20),
  search: z.string().max(MAX_NAME).optional().describe('Partial, case-insensitive match on the name'),
  type: typeSchema.optional(),
});
export type ListTemplatesQuery = z.output<typeof listTemplatesQuery>;

/** POST /templates/:id/test. */
export const testTemplateSchema = z.strictObject({ email: emailSchema.describe('Where the test goes; a contact of the project gets its own data') });
