import { z } from 'zod';
import { contactSchema, emailSchema } from '../contacts/schema.ts';
import { LIMITS } from '../limits.ts';
import { FILTER_OPERATORS, SEGMENT_TYPES, TIME_UNITS } from './vocabulary.ts';

export const MAX_NAME = LIMITS.name;
export const MAX_DESCRIPTION = LIMITS.description;
export const MAX_EMAILS_PER_CALL = LIMITS.segmentMembers;

const nameSchema = z.string().trim().min(1, 'Name is required').max(MAX_NAME);
const descriptionSchema = z.string().max(MAX_DESCRIPTION);

/**
 * The shape of a FilterCondition, for the dashboard's filter builder (a form checks it before
 * asking the API) and the OpenAPI document. What a filter means (which operator fits which field,
 * a value's type) is the compiler's (domain/segments/filter.ts), which names a bad filter by its path.
 */
export const filterConditionSchema = z.strictObject({
  logic: z.enum(['AND', 'OR']),
  groups: z
    .array(
      z.strictObject({
        filters: z
          .array(
            z.strictObject({
              field: z.string().min(1, 'Choose a field').max(LIMITS.eventName + 'event.'.length),
              operator: z.enum(FILTER_OPERATORS),
              value: z.union([z.string().max(LIMITS.filter.value), z.number(), z.boolean()]).optional(),
              unit: z.enum(TIME_UNITS).optional(),
            }),
          )
          .min(1, 'A group needs at least one filter')
          .max(LIMITS.filter.filtersPerGroup),
      }),
    )
    .min(1, 'A condition needs at least one group')
    .max(LIMITS.filter.groups),
});
export type FilterConditionInput = z.output<typeof filterConditionSchema>;

/** The condition as a request field: the compiler checks it, so that every bad part is named by its path. */
const { $schema: _, ...conditionShape } = z.toJSONSchema(filterConditionSchema, { io: 'input' }) as Record<string, unknown>;
export const conditionInput = z
  .unknown()
  .meta(conditionShape)
  .describe(
    `FilterCondition {logic: "AND"|"OR", groups: [{filters: [{field, operator, value?, unit?}]}]}; ` +
      `operators: ${FILTER_OPERATORS.join(', ')}; units: ${TIME_UNITS.join(', ')}`,
  );

export const createSegmentSchema = z.strictObject({
  name: nameSchema,
  type: z.enum(SEGMENT_TYPES).default('DYNAMIC'),
  condition: conditionInput.optional().describe('Required for DYNAMIC, refused for STATIC'),
  description: descriptionSchema.nullable().optional(),
  trackMembership: z.boolean().default(false),
});
export type CreateSegmentInput = z.output<typeof createSegmentSchema>;

/** Only given fields change; null clears the description; {} is refused. */
export const patchSegmentSchema = z
  .strictObject({
    name: nameSchema.optional(),
    description: descriptionSchema.nullable().optional(),
    condition: conditionInput.optional().describe('DYNAMIC segments only'),
    trackMembership: z.boolean().optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'Give at least one field to change' });
export type PatchSegmentInput = z.output<typeof patchSegmentSchema>;

export const membersSchema = z.strictObject({
  emails: z.array(emailSchema).min(1, 'Give at least one email').max(MAX_EMAILS_PER_CALL, `At most ${MAX_EMAILS_PER_CALL} emails per call`),
});

export const segmentContactsQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  pageSize: z.coerce.number().int().min(1).max(100).default(20),
  total: z
    .enum(['true', 'false'], { message: 'total is true or false' })
    .default('true')
    .transform((v) => v === 'true')
    .describe('false: no `total` and `totalPages` (no count: a client that has the member count from GET /segments/:id), `hasMore` instead'),
});
export type SegmentContactsQuery = z.output<typeof segmentContactsQuery>;

const filterSchema = z.object({
  field: z.string(),
  operator: z.enum(FILTER_OPERATORS),
  value: z.union([z.string(), z.number(), z.boolean()]).optional(),
  unit: z.enum(TIME_UNITS).optional(),
});

export const segmentSchema = z.object({
  id: z.string(),
  name: z.string(),
  slug: z.string().describe('Name lower-cased, whitespace as hyphens; names the segment.<slug>.entry|exit events'),
  type: z.enum(SEGMENT_TYPES),
  description: z.string().nullable(),
  condition: z.object({ logic: z.enum(['AND', 'OR']), groups: z.array(z.object({ filters: z.array(filterSchema) })) }).nullable(),
  memberCount: z.number().int(),
  trackMembership: z.boolean(),
  createdAt: z.string(),
  updatedAt: z.string(),
  warnings: z
    .array(
      z.object({
        code: z.literal('mixed_types'),
        field: z.string().describe('The filter’s field, e.g. data.score'),
        filter: z.string().describe('The filter’s path, e.g. condition.groups.0.filters.1'),
        types: z.array(z.enum(['string', 'number', 'boolean', 'date'])).describe('The types the key holds across contacts'),
        message: z.string().describe('How the filter reads the key: as text, or matching no (or every) contact'),
      }),
    )
    .describe(
      'Filters whose data key holds values of more than one type across contacts. Such a key is read as text: ' +
        'equals, notEquals, contains and notContains compare each value’s text (5 as "5", true as "true"); a filter ' +
        'that needs one type (comparisons, within, olderThan) matches no contact. Empty when nothing is mixed.',
    ),
});
export type Segment = z.infer<typeof segmentSchema>;

/** POST /segments/count: how many contacts a condition selects, without saving it. */
export const countConditionSchema = z.strictObject({ condition: conditionInput });
export const conditionCountSchema = z.object({
  count: z.number().int().describe('Contacts of the project the condition selects now (subscribed or not)'),
  warnings: segmentSchema.shape.warnings,
});

export const segmentListItemSchema = segmentSchema.pick({ id: true, name: true, type: true, memberCount: true, trackMembership: true, createdAt: true });

export const segmentContactsSchema = z.object({
  contacts: z.array(contactSchema),
  page: z.number().int(),
  pageSize: z.number().int(),
  total: z.number().int().optional().describe('Left out with total=false'),
  totalPages: z.number().int().optional().describe('Left out with total=false'),
  hasMore: z.boolean().optional().describe('Only with total=false: a page follows this one'),
});
