import { z } from 'zod';
import { callDataSchema, emailSchema } from '../contacts/schema.ts';
import { LIMITS } from '../limits.ts';

export const MAX_RECIPIENTS = LIMITS.send.recipients;
export const MAX_ATTACHMENTS = LIMITS.send.attachments;
export const MAX_ATTACHMENT_BYTES = LIMITS.send.attachmentBytes;

const address = z.union([emailSchema, z.strictObject({ name: z.string().trim().max(LIMITS.name).optional(), email: emailSchema })]);

/**
 * Headers a caller may not set: those the platform writes itself (a caller's value would break
 * signing, threading or unsubscribe), trace and authentication headers (which only the servers on
 * the way may write: a caller's would forge a delivery path or a verdict), and read-receipt
 * requests. Every `Content-*` (the MIME structure is the platform's), `Resent-*`, `ARC-*` and
 * `X-Mailroom-*` header is refused too (see isReservedHeader).
 */
const RESERVED_HEADERS = new Set([
  'from', 'to', 'cc', 'bcc', 'subject', 'reply-to', 'sender', 'message-id', 'date', 'mime-version',
  'dkim-signature', 'list-unsubscribe', 'list-unsubscribe-post', 'return-path',
  'received', 'received-spf', 'authentication-results', 'delivered-to', 'x-original-to',
  'disposition-notification-to', 'return-receipt-to',
]);
const RESERVED_PREFIXES = ['content-', 'resent-', 'arc-', 'x-mailroom-'];

const isReservedHeader = (name: string) => {
  const lower = name.toLowerCase();
  return RESERVED_HEADERS.has(lower) || RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix));
};

const headers = z
  .record(
    z.string().regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/, 'Invalid header name'),
    // Tab is the one control character a header value may hold (RFC 5322 folding whitespace).
    z.string().max(LIMITS.send.headerValue).regex(/^[^\x00-\x08\x0a-\x1f\x7f]*$/, 'Header values cannot contain line breaks or control characters'),
  )
  .superRefine((value, ctx) => {
    for (const name of Object.keys(value)) {
      if (isReservedHeader(name)) ctx.addIssue({ code: 'custom', message: `"${name}" is set by the platform or by the servers on the way`, path: [name] });
    }
    if (Object.keys(value).length > LIMITS.send.headers) ctx.addIssue({ code: 'custom', message: `At most ${LIMITS.send.headers} headers`, path: [] });
  })
  .meta({ maxProperties: LIMITS.send.headers });

const base64 = /^[A-Za-z0-9+/]*={0,2}$/;

const attachment = z.strictObject({
  filename: z.string().trim().min(1).max(LIMITS.send.filename).regex(/^[^\r\n\\/]*$/, 'A file name, without path or line breaks'),
  content: z.string().min(1).regex(base64, 'content must be base64').refine((s) => s.length % 4 === 0, 'content must be base64'),
  contentType: z.string().regex(/^[\w.+-]+\/[\w.+-]+$/, 'A MIME type such as application/pdf'),
});

export const decodedSize = (b64: string) => (b64.length / 4) * 3 - (b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0);

export const sendSchema = z
  .strictObject({
    to: z.union([address, z.array(address).min(1).max(MAX_RECIPIENTS)]),
    subject: z.string().min(1).max(LIMITS.subject).optional(),
    body: z.string().min(1).max(LIMITS.sendBodyChars).optional(),
    template: z.string().min(1).max(LIMITS.id).optional(),
    from: address.optional(),
    name: z.string().trim().max(LIMITS.name).optional(),
    reply: emailSchema.optional(),
    subscribed: z.boolean().optional(),
    headers: headers.optional(),
    data: callDataSchema.optional(),
    attachments: z
      .array(attachment)
      .max(MAX_ATTACHMENTS)
      .optional()
      .describe(`At most ${MAX_ATTACHMENTS}, ${MAX_ATTACHMENT_BYTES / 1024 / 1024} MB decoded in total`),
  })
  .superRefine((value, ctx) => {
    const total = (value.attachments ?? []).reduce((sum, a) => sum + decodedSize(a.content), 0);
    if (total > MAX_ATTACHMENT_BYTES) {
      ctx.addIssue({ code: 'custom', message: `Attachments total ${total} bytes; at most ${MAX_ATTACHMENT_BYTES}`, path: ['attachments'] });
    }
  });

export type SendInput = z.output<typeof sendSchema>;

export const sendResponseSchema = z.object({
  emails: z.array(
    z.object({
      contact: z.object({ id: z.string(), email: z.string() }),
      email: z.string(),
      status: z
        .enum(['QUEUED', 'SKIPPED', 'SUPPRESSED'])
        .describe('SKIPPED: a marketing template to an unsubscribed contact; SUPPRESSED: the address is on the project\'s suppression list (nothing is sent, no email.sent)'),
    }),
  ),
  timestamp: z.string(),
});
