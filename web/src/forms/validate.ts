import type { z } from 'zod';
import { ApiError } from '../api/client.ts';

/** Field name → message, for the form's fields. */
export type FieldErrors = Record<string, string>;

/**
 * Checks a form's values with the API's own zod schema (domain/**\/schema.ts): what the form
 * refuses is exactly what the API would.
 */
export function validate<S extends z.ZodType>(schema: S, values: unknown): { data: z.output<S>; errors?: undefined } | { data?: undefined; errors: FieldErrors } {
  const parsed = schema.safeParse(values);
  if (parsed.success) return { data: parsed.data };
  const errors: FieldErrors = {};
  for (const issue of parsed.error.issues) {
    const field = issue.path.join('.') || 'form';
    errors[field] ??= issue.message;
  }
  return { errors };
}

/** The field errors of a 422 from the API, in the same shape. */
export function serverFieldErrors(error: unknown): FieldErrors {
  const errors: FieldErrors = {};
  if (error instanceof ApiError) for (const e of error.fieldErrors) errors[e.field] ??= e.message;
  return errors;
}
