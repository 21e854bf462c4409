import { z } from 'zod';
import { outboundUrlSchema } from '../http/schema.ts';
import { LIMITS } from '../limits.ts';
import { invalidPattern } from './patterns.ts';

/** The most patterns one endpoint may list. */
export const MAX_EVENT_PATTERNS = 100;

const eventPattern = z
  .string()
  .trim()
  .min(1)
  .max(LIMITS.eventName)
  .superRefine((pattern, ctx) => {
    const why = invalidPattern(pattern);
    if (why) ctx.addIssue({ code: 'custom', message: `"${pattern}": ${why}` });
  });

const events = z
  .array(eventPattern)
  .min(1, 'List at least one event name or pattern (`*` for every event)')
  .max(MAX_EVENT_PATTERNS)
  .transform((list) => [...new Set(list)])
  .describe('Exact event names, or patterns in which `*` stands for one dot-separated part (`email.*`, `segment.*.entry`); `*` alone is every event');

export const createWebhookSchema = z.strictObject({
  url: outboundUrlSchema,
  events,
  description: z.string().trim().max(LIMITS.description).nullable().optional(),
  enabled: z.boolean().default(true),
});

export const patchWebhookSchema = z
  .strictObject({
    url: outboundUrlSchema.optional(),
    events: events.optional(),
    description: z.string().trim().max(LIMITS.description).nullable().optional(),
    enabled: z.boolean().optional().describe('Enabling clears `disabledReason`; deliveries missed while disabled are not sent (replay them)'),
  })
  .refine((b) => Object.keys(b).length > 0, 'Name at least one field to change');

export const replaySinceSchema = z.strictObject({
  since: z.iso.datetime({ offset: true, message: 'Expected an ISO 8601 timestamp' }).describe('Every delivery to this endpoint created at or after this time is sent again'),
});

export const webhookSchema = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  events: z.array(z.string()),
  enabled: z.boolean(),
  disabledReason: z.string().nullable().describe('Why the platform disabled it (410 Gone, 24 h of failures)'),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const webhookWithSecretSchema = webhookSchema.extend({
  secret: z.string().describe('The Standard Webhooks signing secret (`whsec_…`): shown here only, keep it'),
});

export const deliverySchema = z.object({
  id: z.string().describe('Also the `webhook-id` header of every attempt'),
  webhookId: z.string(),
  eventId: z.string(),
  type: z.string().describe('The event name'),
  status: z.enum(['PENDING', 'DELIVERED', 'FAILED']),
  attempts: z.array(
    z.object({
      at: z.string(),
      status: z.number().int().optional().describe("The receiver's HTTP status"),
      error: z.string().optional().describe('Why there was no answer'),
      durationMs: z.number(),
      response: z.string().optional().describe("The first 1 KB of the receiver's answer"),
    }),
  ),
  nextAttemptAt: z.string().nullable(),
  replayOf: z.string().nullable().describe('For a replay: the delivery it sends again'),
  createdAt: z.string(),
});
