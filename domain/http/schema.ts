import { z } from 'zod';

/** A URL the platform will call (WEBHOOK steps, event webhooks): absolute http(s), no credentials in it. */
export const outboundUrlSchema = z
  .string()
  .max(2048)
  .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), 'url must be an absolute http:// or https:// URL')
  .refine((u) => !URL.canParse(u) || (!new URL(u).username && !new URL(u).password), 'Put credentials in headers, not in the URL');
