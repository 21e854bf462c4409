import { z } from 'zod';
import { AUDIENCE_TYPES, CAMPAIGN_STATUSES } from '../../actors/campaign/states.ts';
import { emailSchema } from '../contacts/schema.ts';
import { LIMITS } from '../limits.ts';
import { conditionInput } from '../segments/schema.ts';
import { addressSchema, MAX_BODY_BYTES, MAX_DESCRIPTION, MAX_FROM_NAME, MAX_NAME, MAX_SUBJECT } from '../templates/schema.ts';

const LINE_BREAK = /[\r\n\u0085\u2028\u2029]/;
const oneLine = (s: string) => !LINE_BREAK.test(s);

const nameSchema = z.string().trim().min(1, 'Name is required').max(MAX_NAME);
const subjectSchema = z.string().trim().min(1, 'Subject is required').max(MAX_SUBJECT).refine(oneLine, 'Subject must be one line (no line breaks)');
const bodySchema = z
  .string()
  .refine((s) => s.trim() !== '', 'Body is required')
  .refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_BODY_BYTES, `Body must be at most ${MAX_BODY_BYTES} bytes (512 KB of UTF-8)`)
  .describe('HTML; supports {{variable}}');
const fromNameSchema = z.string().trim().min(1).max(MAX_FROM_NAME).refine(oneLine, 'fromName must be one line (no line breaks)');
const audienceTypeSchema = z.enum(AUDIENCE_TYPES);
const segmentIdSchema = z.string().min(1).max(LIMITS.id);

/** POST /campaigns. The audience fields are checked together by the service (and the actor). */
export const createCampaignSchema = z.strictObject({
  name: nameSchema,
  subject: subjectSchema,
  body: bodySchema,
  from: addressSchema.describe('Sender address on a verified domain of the project'),
  audienceType: audienceTypeSchema,
  description: z.string().max(MAX_DESCRIPTION).nullable().optional(),
  fromName: fromNameSchema.nullable().optional(),
  replyTo: addressSchema.nullable().optional(),
  segmentId: segmentIdSchema.nullable().optional().describe('Required when audienceType is SEGMENT'),
  audienceCondition: conditionInput.optional().describe('FilterCondition; required when audienceType is FILTERED'),
});
export type CreateCampaignInput = z.output<typeof createCampaignSchema>;

/** PUT /campaigns/:id: the given fields change; DRAFT or SCHEDULED only. */
export const updateCampaignSchema = z
  .strictObject({
    name: nameSchema.optional(),
    subject: subjectSchema.optional(),
    body: bodySchema.optional(),
    from: addressSchema.optional(),
    audienceType: audienceTypeSchema.optional(),
    description: z.string().max(MAX_DESCRIPTION).nullable().optional(),
    fromName: fromNameSchema.nullable().optional(),
    replyTo: addressSchema.nullable().optional(),
    segmentId: segmentIdSchema.nullable().optional(),
    audienceCondition: conditionInput.optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), { message: 'Give at least one field to change' });
export type UpdateCampaignInput = z.output<typeof updateCampaignSchema>;

/** POST /campaigns/audience/count: the audience fields of a campaign, checked as on create. */
export const audienceCountSchema = z.strictObject({
  audienceType: audienceTypeSchema,
  segmentId: segmentIdSchema.nullable().optional().describe('Required when audienceType is SEGMENT'),
  audienceCondition: conditionInput.optional().describe('FilterCondition; required when audienceType is FILTERED'),
});
export type AudienceCountInput = z.output<typeof audienceCountSchema>;

export const sendCampaignSchema = z.strictObject({
  scheduledFor: z.iso
    .datetime({ offset: true, message: 'Expected an ISO 8601 timestamp' })
    .nullable()
    .optional()
    .describe('When to send; omit or null to send now'),
});

export const testCampaignSchema = z.strictObject({ email: emailSchema });

export const listCampaignsQuery = z.object({
  page: z.coerce.number().int().min(1).max(1_000_000).default(1),
  pageSize: z.coerce.number().int().min(1).max(100).default(20),
  status: z.enum(CAMPAIGN_STATUSES).optional(),
});
export type ListCampaignsQuery = z.output<typeof listCampaignsQuery>;

export const campaignSchema = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  subject: z.string(),
  body: z.string(),
  from: z.string(),
  fromName: z.string().nullable(),
  replyTo: z.string().nullable(),
  audienceType: audienceTypeSchema,
  segmentId: z.string().nullable(),
  audienceCondition: z.unknown().nullable(),
  status: z.enum(CAMPAIGN_STATUSES),
  scheduledFor: z.string().nullable(),
  sentAt: z.string().nullable().describe('When sending began'),
  completedAt: z.string().nullable().describe('When every recipient had a final outcome (SENT)'),
  recipientCount: z.number().int().describe('Recipients queued so far'),
  cancelReason: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const campaignStatsSchema = z.object({
  delivered: z.number().int(),
  opens: z.number().int(),
  clicks: z.number().int(),
  bounces: z.number().int(),
  complaints: z.number().int(),
});
