import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Platform } from '../../../runtime/platform.ts';
import { isValidRequestId, withRequestId } from '../../../runtime/request-context.ts';

/** Probes and scrapes: logged at debug so that a poll every few seconds does not drown the access log. */
const QUIET_ROUTES = new Set(['/health', '/metrics']);

/**
 * First on every request: its id (the caller's `X-Request-Id` when well-formed, else a new
 * `req_…`), echoed in `X-Request-Id` and current for all the work the request causes; one access
 * log line when it ends; and its latency in `mailroom_http_request_duration_seconds`.
 * The line names the route pattern, never the raw path: paths of the public pages carry signed tokens.
 */
export function observeRequests(p: Platform): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    const incoming = req.get('x-request-id');
    const requestId = isValidRequestId(incoming) ? incoming : `req_${randomUUID().replaceAll('-', '')}`;
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    res.once('close', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = routeOf(req);
      // A response the client did not wait for still gets its line, with what was decided.
      const status = res.statusCode;
      p.metrics?.observeRequest(req.method, route, status, seconds);
      const line = { requestId, method: req.method, route, status, durationMs: Math.round(seconds * 1e4) / 10, ...(res.writableFinished ? {} : { aborted: true }) };
      if (QUIET_ROUTES.has(route)) p.log.debug(line, 'request');
      else p.log.info(line, 'request');
    });
    withRequestId(requestId, next);
  };
}

/**
 * The pattern of the route that answered (`/contacts/:id`); the mount path of a middleware that
 * answered by itself (the CORS preflight); `unmatched` when nothing did (404), so raw paths never
 * become label values.
 */
function routeOf(req: Request): string {
  const path = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof path === 'string') return `${req.baseUrl}${path}`;
  return req.baseUrl || 'unmatched';
}
