/**
 * The one error type of the product. Thrown where a rule is broken; turned into the spec's
 * error envelope in exactly one place (apps/api/http/errors.ts).
 */
export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'EMAIL_VERIFICATION_REQUIRED'
  | 'DOMAIN_NOT_VERIFIED'
  | 'NOT_FOUND'
  | 'CONFLICT'
  | 'INVALID_STATE'
  | 'PAYLOAD_TOO_LARGE'
  | 'RATE_LIMIT_EXCEEDED'
  | 'INTERNAL_ERROR';

const STATUS: Record<ErrorCode, number> = {
  VALIDATION_ERROR: 422,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  EMAIL_VERIFICATION_REQUIRED: 403,
  DOMAIN_NOT_VERIFIED: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  INVALID_STATE: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMIT_EXCEEDED: 429,
  INTERNAL_ERROR: 500,
};

export interface FieldError {
  field: string;
  message: string;
  code: string;
}

export interface AppErrorOptions {
  fieldErrors?: FieldError[];
  suggestion?: string;
  /** Seconds, for RATE_LIMIT_EXCEEDED. */
  retryAfter?: number;
}

export class AppError extends Error {
  readonly statusCode: number;
  readonly fieldErrors?: FieldError[];
  readonly suggestion?: string;
  readonly retryAfter?: number;
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.statusCode = STATUS[code];
    this.fieldErrors = options.fieldErrors;
    this.suggestion = options.suggestion;
    this.retryAfter = options.retryAfter;
  }

  /** Plain form that crosses a process boundary (Dapr actor calls) and comes back intact. */
  toJSON() {
    return {
      name: 'AppError',
      code: this.code,
      message: this.message,
      fieldErrors: this.fieldErrors,
      suggestion: this.suggestion,
      retryAfter: this.retryAfter,
    };
  }

  static fromJSON(value: unknown): AppError | undefined {
    if (!value || typeof value !== 'object') return undefined;
    const v = value as Record<string, unknown>;
    if (v.name !== 'AppError' || typeof v.code !== 'string' || !(v.code in STATUS)) return undefined;
    return new AppError(v.code as ErrorCode, String(v.message ?? ''), {
      fieldErrors: v.fieldErrors as FieldError[] | undefined,
      suggestion: v.suggestion as string | undefined,
      retryAfter: v.retryAfter as number | undefined,
    });
  }
}

export const notFound = (what: string) => new AppError('NOT_FOUND', `${what} not found`);

export const invalid = (field: string, message: string, code = 'invalid') =>
  new AppError('VALIDATION_ERROR', message, { fieldErrors: [{ field, message, code }] });
