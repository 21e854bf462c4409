import { z } from 'zod';
import { emailSchema } from '../contacts/schema.ts';
import { LIMITS } from '../limits.ts';

/**
 * The request schemas of accounts and projects, shared by the API's routes and the dashboard's
 * forms (web/), so a form and the API can never disagree. Imports zod and limits only: whatever
 * this file imports ends up in the browser bundle.
 */
export const passwordSchema = z.string().min(LIMITS.password.min).max(LIMITS.password.max);
export const credentialsSchema = z.strictObject({ email: emailSchema, password: passwordSchema });
/** Sign-in takes any password a user may have chosen before the current minimum. */
export const signInSchema = credentialsSchema.extend({ password: z.string().min(1).max(LIMITS.password.max) });
export const languageSchema = z.string().regex(/^[a-z]{2}$/, 'ISO 639-1 code such as "en"');
export const projectNameSchema = z.string().trim().min(1).max(LIMITS.projectName);
export const roleSchema = z.enum(['ADMIN', 'MEMBER']);
export const newProjectSchema = z.strictObject({ name: projectNameSchema, language: languageSchema.optional() });
export const projectPatchSchema = z.strictObject({
  name: projectNameSchema.optional(),
  language: languageSchema.optional(),
  address: z.string().trim().max(LIMITS.projectAddress).optional(),
  footer: z.boolean().optional(),
});
export const newMemberSchema = z.strictObject({ email: emailSchema, role: roleSchema });

/** A user as the API shows one (signup, sign-in, the session). */
export const publicUserSchema = z.object({ id: z.string(), email: z.string(), emailVerified: z.boolean() });
