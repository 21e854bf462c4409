import { z } from 'zod';
import { outboundUrlSchema } from '../http/schema.ts';
import { DELAY_UNITS, EXECUTION_STATUSES, STEP_TYPES, type StepType } from '../../actors/workflow-execution/behaviour.ts';
import { contactDataSchema } from '../contacts/schema.ts';
import { AppError, type FieldError } from '../errors.ts';

export const MAX_NAME = 200;
export const MAX_DESCRIPTION = 1000;
const MAX_EVENT_NAME = 200;
/** The longest DELAY or WAIT_FOR_EVENT timeout: one year. */
export const MAX_WAIT_SECONDS = 366 * 86_400;
export const SECONDS_PER_UNIT = { seconds: 1, minutes: 60, hours: 3_600, days: 86_400, weeks: 604_800 } as const;

const nameSchema = z.string().trim().min(1, 'Name is required').max(MAX_NAME);
const eventNameSchema = z.string().trim().min(1, 'eventName is required').max(MAX_EVENT_NAME);
const idSchema = z.string().min(1).max(200);
/** Only EVENT triggers run; anything else would be a workflow that never starts. */
const triggerTypeSchema = z.literal('EVENT', { message: 'triggerType must be EVENT (the only trigger that runs)' });
const triggerConfigSchema = z
  .record(z.string(), z.unknown())
  .refine((v) => JSON.stringify(v).length <= 10_000, 'triggerConfig must be at most 10,000 characters of JSON')
  .describe('Stored as given; the trigger is `eventName`');

export const createWorkflowSchema = z.strictObject({
  name: nameSchema,
  eventName: eventNameSchema.describe('The event that starts an execution: a tracked name or a system event such as segment.<slug>.entry'),
  enabled: z.boolean().default(false),
  allowReentry: z.boolean().default(false),
  description: z.string().max(MAX_DESCRIPTION).nullable().optional(),
  triggerType: triggerTypeSchema.optional(),
  triggerConfig: triggerConfigSchema.nullable().optional(),
});
export type CreateWorkflowInput = z.output<typeof createWorkflowSchema>;

export const patchWorkflowSchema = z
  .strictObject({
    name: nameSchema.optional(),
    description: z.string().max(MAX_DESCRIPTION).nullable().optional(),
    eventName: eventNameSchema.optional(),
    enabled: z.boolean().optional(),
    allowReentry: z.boolean().optional(),
    triggerType: triggerTypeSchema.optional(),
    triggerConfig: triggerConfigSchema.nullable().optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'Give at least one field to change' });
export type PatchWorkflowInput = z.output<typeof patchWorkflowSchema>;

export const listWorkflowsQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  pageSize: z.coerce.number().int().min(1).max(100).default(20),
  search: z.string().max(MAX_NAME).optional().describe('Partial, case-insensitive match on the name'),
});
export type ListWorkflowsQuery = z.output<typeof listWorkflowsQuery>;

export const listExecutionsQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  pageSize: z.coerce.number().int().min(1).max(100).default(20),
  status: z.enum(EXECUTION_STATUSES).optional(),
});
export type ListExecutionsQuery = z.output<typeof listExecutionsQuery>;

const positionSchema = z.strictObject({ x: z.number().finite(), y: z.number().finite() });
const configInput = z.record(z.string(), z.unknown()).describe('Shape by step type; see the step types');

export const ADDABLE_STEP_TYPES = STEP_TYPES.filter((t) => t !== 'TRIGGER');

export const createStepSchema = z.strictObject({
  type: z.enum(STEP_TYPES).describe('TRIGGER is created with the workflow and cannot be added'),
  name: nameSchema,
  position: positionSchema,
  config: configInput.optional(),
  templateId: idSchema.optional().describe('SEND_EMAIL: shorthand for config.templateId'),
  autoConnect: z.boolean().default(false).describe('Also add a transition from the last step added before this one'),
});
export type CreateStepInput = z.output<typeof createStepSchema>;

export const patchStepSchema = z
  .strictObject({
    name: nameSchema.optional(),
    position: positionSchema.optional(),
    config: configInput.optional(),
    templateId: idSchema.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'Give at least one field to change' });
export type PatchStepInput = z.output<typeof patchStepSchema>;

export const BRANCHES = ['yes', 'no', 'event', 'timeout'] as const;

/** The branches a transition out of a step may carry: `yes|no` out of a CONDITION, `event|timeout` out of a WAIT_FOR_EVENT, none elsewhere. */
export function branchesOf(type: StepType): readonly (typeof BRANCHES)[number][] {
  if (type === 'CONDITION') return ['yes', 'no'];
  if (type === 'WAIT_FOR_EVENT') return ['event', 'timeout'];
  return [];
}

export const createTransitionSchema = z.strictObject({
  fromStepId: idSchema,
  toStepId: idSchema,
  condition: z
    .strictObject({ branch: z.enum(BRANCHES).optional() })
    .nullable()
    .optional()
    .describe('{branch: "yes"|"no"} out of CONDITION, {branch: "event"|"timeout"} out of WAIT_FOR_EVENT'),
  priority: z.number().finite().nullable().optional().describe('Lower first; transitions without one come after'),
});
export type CreateTransitionInput = z.output<typeof createTransitionSchema>;

export const stepParams = z.object({ id: idSchema, stepId: idSchema });
export const transitionParams = z.object({ id: idSchema, transitionId: idSchema });
export const executionParams = z.object({ id: idSchema, executionId: idSchema });

// ---- step configs by type ----------------------------------------------------------------------

export const WEBHOOK_METHODS = ['POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** Headers the HTTP client sets itself; a step may not. */
const RESERVED_HEADERS = ['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect'];
const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

const waitSeconds = (n: number) => n > 0 && n <= MAX_WAIT_SECONDS;

export const stepConfigSchemas: Record<Exclude<StepType, 'TRIGGER'>, z.ZodType> = {
  SEND_EMAIL: z.strictObject({ templateId: idSchema }),
  DELAY: z
    .strictObject({ amount: z.number().finite().positive(), unit: z.enum(DELAY_UNITS) })
    .refine((c) => waitSeconds(c.amount * SECONDS_PER_UNIT[c.unit]), { message: 'A delay is at most one year', path: ['amount'] }),
  WAIT_FOR_EVENT: z.strictObject({
    eventName: eventNameSchema,
    timeout: z.number().finite().positive().refine(waitSeconds, 'timeout is in seconds, at most one year'),
  }),
  CONDITION: z.strictObject({
    field: z.string().min(1).max(300),
    operator: z.string().min(1).max(50),
    value: z.unknown().optional(),
    unit: z.string().optional(),
  }),
  WEBHOOK: z.strictObject({
    url: outboundUrlSchema,
    method: z.enum(WEBHOOK_METHODS).default('POST'),
    headers: z
      .record(
        z.string().regex(headerName, 'Not a valid header name').refine((h) => !RESERVED_HEADERS.includes(h.toLowerCase()), 'This header is set by the platform'),
        z.string().max(8_000).refine((v) => !/[\r\n\0]/.test(v), 'Header values cannot contain line breaks'),
      )
      .default({}),
  }),
  UPDATE_CONTACT: z.strictObject({
    data: contactDataSchema.refine((d) => Object.keys(d).length > 0, 'data must name at least one field'),
  }),
  EXIT: z.strictObject({ reason: z.string().max(MAX_DESCRIPTION).optional() }),
};

/** A 422 naming each bad part of a step's config as `config.<path>`. */
export function parseStepConfig(type: Exclude<StepType, 'TRIGGER'>, config: Record<string, unknown>): Record<string, unknown> {
  const parsed = stepConfigSchemas[type].safeParse(config);
  if (parsed.success) return parsed.data as Record<string, unknown>;
  const errors: FieldError[] = parsed.error.issues.map((issue) => {
    const path = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') path.push(...issue.keys);
    return { field: ['config', ...path].join('.'), message: issue.message, code: issue.code };
  });
  throw new AppError('VALIDATION_ERROR', `The config does not fit a ${type} step`, { fieldErrors: errors });
}

// ---- responses -------------------------------------------------------------------------------

export const workflowSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  eventName: z.string(),
  enabled: z.boolean(),
  allowReentry: z.boolean(),
  triggerType: z.string(),
  triggerConfig: z.record(z.string(), z.unknown()).nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const stepSchema = z.object({
  id: z.string(),
  workflowId: z.string(),
  type: z.enum(STEP_TYPES),
  name: z.string(),
  position: z.object({ x: z.number(), y: z.number() }),
  config: z.record(z.string(), z.unknown()),
  templateId: z.string().nullable().describe('SEND_EMAIL: config.templateId'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const transitionSchema = z.object({
  id: z.string(),
  workflowId: z.string(),
  fromStepId: z.string(),
  toStepId: z.string(),
  condition: z.object({ branch: z.enum(BRANCHES).optional() }).nullable(),
  priority: z.number().nullable(),
  createdAt: z.string(),
});

export const workflowWithStepsSchema = workflowSchema.extend({
  steps: z.array(stepSchema),
  transitions: z.array(transitionSchema),
});

export const executionSchema = z.object({
  id: z.string(),
  workflowId: z.string(),
  contactId: z.string(),
  status: z.enum(EXECUTION_STATUSES),
  currentStepId: z.string().nullable(),
  waitingFor: z.string().nullable().describe('WAIT_FOR_EVENT: the awaited event name'),
  wakeAt: z.string().nullable().describe('WAITING: when the delay or timeout ends'),
  path: z.array(z.string()).describe('The ids of the steps entered so far, in order, TRIGGER first (the last 200); empty for executions started before paths were kept'),
  reason: z.string().nullable().describe('Why it ended: EXIT reason, failure, cancellation'),
  createdAt: z.string(),
  updatedAt: z.string(),
  completedAt: z.string().nullable(),
});
