import express, { type RequestHandler, type Router } from 'express';
import multer from 'multer';
import type { z } from 'zod';
import { AppError } from '../../../domain/errors.ts';
import { LIMITS } from '../../../domain/limits.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { authenticate, rateLimitFor } from './auth.ts';
import { fieldErrors } from './errors.ts';
import { Reply, type RouteSpec } from './route.ts';

/** Mounts declared routes: authenticate, meter, parse, validate, handle, shape the envelope. */
export function mountRoutes(router: Router, routes: RouteSpec[], platform: Platform): void {
  for (const spec of routes) {
    const steps: RequestHandler[] = [
      async (req, res, next) => {
        res.locals.auth = await authenticate(platform, req, spec.auth);
        next();
      },
    ];
    if (!spec.unmetered) steps.push(rateLimitFor(platform));
    if (spec.upload) {
      steps.push(uploadOf(spec.upload));
    } else if (spec.rawBody) {
      steps.push(express.raw({ type: () => true, limit: spec.rawBody.maxBytes }));
    } else if (spec.body) {
      steps.push(express.json({ limit: spec.bodyLimit ?? LIMITS.body.defaultBytes, strict: false }));
    }
    steps.push(async (req, res) => {
      const input = {
        auth: res.locals.auth,
        params: validate(spec.params, req.params, ''),
        query: validate(spec.query, req.query, ''),
        body: validateBody(spec, req),
        requestId: String(res.locals.requestId),
        req,
        res,
      };
      const result = await spec.handle(input as never);
      send(res, spec, result);
    });
    router[spec.method](spec.path, ...steps);
  }
}

/**
 * One file in `field`, in memory. A file over the limit is a 413; any other body multer or busboy
 * cannot take (no boundary, a broken part header, a part without a name, too many parts, a
 * cut-off form) is the client's fault: a 422 on the field, never a 500.
 */
function uploadOf(upload: NonNullable<RouteSpec['upload']>): RequestHandler {
  const single = multer({
    storage: multer.memoryStorage(),
    limits: { fileSize: upload.maxBytes, files: 1, fields: 20, parts: 21, fieldSize: 64 * 1024 },
  }).single(upload.field);
  const malformed = (err: unknown) => {
    if (err instanceof multer.MulterError) {
      if (err.code === 'LIMIT_FILE_SIZE') return new AppError('PAYLOAD_TOO_LARGE', `The file is larger than ${upload.maxBytes} bytes`);
      return new AppError('VALIDATION_ERROR', err.message, {
        fieldErrors: [{ field: upload.field, message: err.field ? `${err.message} (${err.field})` : err.message, code: err.code.toLowerCase() }],
      });
    }
    return new AppError('VALIDATION_ERROR', 'The multipart/form-data body cannot be read', {
      fieldErrors: [{ field: upload.field, message: (err as Error)?.message || 'malformed multipart body', code: 'invalid_multipart' }],
    });
  };
  return (req, res, next) => {
    try {
      single(req, res, (err?: unknown) => next(err ? malformed(err) : undefined));
    } catch (err) {
      next(malformed(err));
    }
  };
}

function validate(schema: z.ZodType | undefined, value: unknown, prefix: string): unknown {
  if (!schema) return undefined;
  // Absent is empty; a JSON `null` body is not an empty object and is refused like any non-object.
  const parsed = schema.safeParse(value === undefined ? {} : value);
  if (parsed.success) return parsed.data;
  throw new AppError('VALIDATION_ERROR', 'Request validation failed', {
    fieldErrors: fieldErrors(parsed.error, prefix),
  });
}

function validateBody(spec: RouteSpec, req: express.Request): unknown {
  const schema = spec.body;
  if (!schema) return undefined;
  if (req.body === undefined && spec.bodyOptional && hasNoBody(req)) return validate(schema, {}, '');
  if (req.body === undefined && !req.is('application/json')) {
    throw new AppError('VALIDATION_ERROR', 'Request body must be JSON', {
      fieldErrors: [{ field: 'body', message: 'Send Content-Type: application/json with a JSON body', code: 'invalid_content_type' }],
    });
  }
  // Before any schema: validating (or storing) a 5,000-deep value would overflow the stack, and a
  // `__proto__` key (JSON.parse makes it an own key) would reach the prototype of what copies it.
  const problem = shapeProblem(req.body, LIMITS.body.depth);
  if (problem === 'too_deep') {
    throw new AppError('VALIDATION_ERROR', `The body nests objects and arrays more than ${LIMITS.body.depth} deep`, {
      fieldErrors: [{ field: 'body', message: `At most ${LIMITS.body.depth} levels of objects and arrays`, code: 'too_deep' }],
    });
  }
  if (problem === 'proto_key') {
    throw new AppError('VALIDATION_ERROR', 'A key of the body is "__proto__"', {
      fieldErrors: [{ field: 'body', message: 'No key, at any depth, may be "__proto__"', code: 'reserved_key' }],
    });
  }
  return validate(schema, req.body, '');
}

/**
 * What makes a parsed JSON body unfit for any schema: objects and arrays nested more than `max`
 * deep, or a `__proto__` key. Iterative, so any depth is safe to look at.
 */
function shapeProblem(value: unknown, max: number): 'too_deep' | 'proto_key' | undefined {
  const pending: [unknown, number][] = [[value, 0]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= max) return 'too_deep';
    if (Object.hasOwn(node, '__proto__')) return 'proto_key';
    for (const child of Object.values(node)) pending.push([child, depth + 1]);
  }
  return undefined;
}

/** No content at all: neither a Content-Type nor bytes (absent or zero Content-Length, no chunks). */
function hasNoBody(req: express.Request): boolean {
  const length = req.get('content-length');
  return !req.get('content-type') && !req.get('transfer-encoding') && (length === undefined || Number(length) === 0);
}

function send(res: express.Response, spec: RouteSpec, result: unknown): void {
  const r = result instanceof Reply ? result : new Reply(result);
  const status = r.status ?? spec.status ?? 200;
  if (status === 204) {
    res.status(204).end();
    return;
  }
  if (spec.rawResponse) {
    res.status(status).type(spec.rawResponse.contentType).send(r.data as Buffer);
    return;
  }
  res.status(status).json({
    success: true,
    data: r.data ?? null,
    ...(r.message !== undefined ? { message: r.message } : {}),
    ...(r.page !== undefined ? { nextCursor: r.page.nextCursor, hasMore: r.page.hasMore } : {}),
  });
}
