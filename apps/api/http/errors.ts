import type { ErrorRequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { z } from 'zod';
import { AppError, type FieldError } from '../../../domain/errors.ts';

const SUGGESTIONS: Partial<Record<AppError['code'], string>> = {
  VALIDATION_ERROR: 'Fix the fields listed in `errors` and send the request again.',
  UNAUTHORIZED: 'Send `Authorization: Bearer <key or token>` with a valid credential.',
  FORBIDDEN: 'Use a credential that is allowed to do this (a secret key, or an admin of the project).',
  EMAIL_VERIFICATION_REQUIRED: 'Open the link in the verification email sent at signup, then try again.',
  DOMAIN_NOT_VERIFIED: 'Add the sender domain to the project and verify its DNS records first.',
  NOT_FOUND: 'Check the id; objects of other projects are not visible with this key.',
  CONFLICT: 'The request clashes with existing data; change it or use the existing object.',
  INVALID_STATE: 'The object is not in a state that allows this action.',
  PAYLOAD_TOO_LARGE: 'Send a smaller request body.',
  RATE_LIMIT_EXCEEDED: 'Wait for `Retry-After` seconds, then retry with exponential backoff.',
  INTERNAL_ERROR: 'Retry later; if it persists, report the requestId.',
};

export const errorEnvelopeSchema = z.object({
  success: z.literal(false),
  error: z.object({
    code: z.string(),
    message: z.string(),
    statusCode: z.number().int(),
    requestId: z.string(),
    errors: z.array(z.object({ field: z.string(), message: z.string(), code: z.string() })).optional(),
    suggestion: z.string().optional(),
  }),
  timestamp: z.string(),
});

export function sendError(res: Response, err: AppError): void {
  const requestId = String(res.locals.requestId ?? '');
  if (err.retryAfter !== undefined) res.setHeader('Retry-After', String(err.retryAfter));
  res.status(err.statusCode).json({
    success: false,
    error: {
      code: err.code,
      message: err.message,
      statusCode: err.statusCode,
      requestId,
      ...(err.code === 'VALIDATION_ERROR' ? { errors: err.fieldErrors ?? [] } : {}),
      suggestion: err.suggestion ?? SUGGESTIONS[err.code],
    },
    timestamp: new Date().toISOString(),
  });
}

/** Turns zod issues into the spec's field errors; `prefix` names where the value came from. */
export function fieldErrors(error: z.ZodError, prefix?: string): FieldError[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String);
    // An unknown key is reported on the key itself, which is what a caller has to remove.
    if (issue.code === 'unrecognized_keys') path.push(...issue.keys);
    const field = [prefix, ...path].filter(Boolean).join('.') || prefix || 'body';
    return { field, message: issue.message, code: issue.code };
  });
}

/** Everything thrown or passed to `next(err)` ends here, as the envelope. */
export function errorMiddleware(log: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) return;
    sendError(res, toAppError(err, log, String(res.locals.requestId ?? '')));
  };
}

function toAppError(err: unknown, log: Logger, requestId: string): AppError {
  if (err instanceof AppError) return err;
  const e = err as { type?: string; code?: string; status?: number; message?: string };
  // body-parser and multer errors: the client's fault, never a 500.
  if (e?.type === 'entity.too.large' || e?.code === 'LIMIT_FILE_SIZE') {
    return new AppError('PAYLOAD_TOO_LARGE', 'Request body is too large');
  }
  if (e?.type === 'entity.parse.failed') {
    return new AppError('VALIDATION_ERROR', 'Request body is not valid JSON', {
      fieldErrors: [{ field: 'body', message: 'Malformed JSON', code: 'invalid_json' }],
    });
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new AppError('VALIDATION_ERROR', 'Unsupported body encoding', {
      fieldErrors: [{ field: 'body', message: e.message ?? 'unsupported encoding', code: 'invalid_encoding' }],
    });
  }
  if (typeof e?.code === 'string' && e.code.startsWith('LIMIT_')) {
    return new AppError('VALIDATION_ERROR', e.message ?? 'Invalid upload', {
      fieldErrors: [{ field: 'file', message: e.message ?? 'invalid upload', code: e.code.toLowerCase() }],
    });
  }
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) {
    return new AppError('VALIDATION_ERROR', e.message ?? 'Bad request', {
      fieldErrors: [{ field: 'body', message: e.message ?? 'bad request', code: 'bad_request' }],
    });
  }
  log.error({ err, requestId }, 'unhandled error');
  return new AppError('INTERNAL_ERROR', 'Internal server error');
}
