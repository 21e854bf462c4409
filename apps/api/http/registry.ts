import express, { type RequestHandler, type Router } from 'express';
import multer from 'multer';
import type { z } from 'zod';
import { AppError } from '../../../domain/errors.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { authenticate, rateLimitFor } from './auth.ts';
import { fieldErrors } from './errors.ts';
import { Reply, type RouteSpec } from './route.ts';

/** Mounts declared routes: authenticate, meter, parse, validate, handle, shape the envelope. */
export function mountRoutes(router: Router, routes: RouteSpec[], platform: Platform): void {
  for (const spec of routes) {
    const steps: RequestHandler[] = [
      async (req, res, next) => {
        res.locals.auth = await authenticate(platform, req.get('authorization'), spec.auth);
        next();
      },
    ];
    if (!spec.unmetered) steps.push(rateLimitFor(platform));
    if (spec.upload) {
      steps.push(multer({ storage: multer.memoryStorage(), limits: { fileSize: spec.upload.maxBytes, files: 1 } }).single(spec.upload.field));
    } else if (spec.body) {
      steps.push(express.json({ limit: spec.bodyLimit ?? '1mb', strict: false }));
    }
    steps.push(async (req, res) => {
      const input = {
        auth: res.locals.auth,
        params: validate(spec.params, req.params, ''),
        query: validate(spec.query, req.query, ''),
        body: validateBody(spec.body, req),
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

function validate(schema: z.ZodType | undefined, value: unknown, prefix: string): unknown {
  if (!schema) return undefined;
  const parsed = schema.safeParse(value ?? {});
  if (parsed.success) return parsed.data;
  throw new AppError('VALIDATION_ERROR', 'Request validation failed', {
    fieldErrors: fieldErrors(parsed.error, prefix),
  });
}

function validateBody(schema: z.ZodType | undefined, req: express.Request): unknown {
  if (!schema) return undefined;
  if (req.body === undefined && !req.is('application/json')) {
    throw new AppError('VALIDATION_ERROR', 'Request body must be JSON', {
      fieldErrors: [{ field: 'body', message: 'Send Content-Type: application/json with a JSON body', code: 'invalid_content_type' }],
    });
  }
  return validate(schema, req.body, '');
}

function send(res: express.Response, spec: RouteSpec, result: unknown): void {
  const r = result instanceof Reply ? result : new Reply(result);
  const status = r.status ?? spec.status ?? 200;
  if (status === 204) {
    res.status(204).end();
    return;
  }
  res.status(status).json({
    success: true,
    data: r.data ?? null,
    ...(r.message !== undefined ? { message: r.message } : {}),
  });
}
