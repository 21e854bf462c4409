import { z } from 'zod';
import { AUDIENCE_TYPES, CAMPAIGN_STATUSES } from '../../actors/campaign/states.ts';
import { emailSchema } from '../contacts/schema.ts';
import { LIMITS } from '../limits.ts';
import { conditionInput } from '../segments/schema.ts';
import { addressSchema, bodySchema, descriptionSchema, fromNameSchema, nameSchema, subjectSchema } from '../templates/schema.ts';

const audienceTypeSchema = z.enum(AUDIENCE_TYPES);
const segmentIdSchema = z.string().min(1).max(LIMITS.id);

/** POST /campaigns. The audience fields are checked together by the service (and the actor). */
export const createCampaignSchema = z.strictObject({
  name: nameSchema,
  subject: subjectSchema,
  body: bodySchema,
  from: addressSchema.describe('Sender address on a verified domain of the project'),
  audienceType: audienceTypeSchema,
  description: descriptionSchema.nullable().optional(),
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
    description: descriptionSchema.nullable().optional(),
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
