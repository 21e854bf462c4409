import express from 'express';
import { AppError } from '../../domain/errors.ts';
import { metricsEndpoint } from '../../runtime/metrics.ts';
import type { Platform } from '../../runtime/platform.ts';
import { dashboardRouter } from './http/dashboard.ts';
import { docsRouter } from './http/docs.ts';
import { errorMiddleware, sendError } from './http/errors.ts';
import { observeRequests } from './http/observe.ts';
import { openApiDocument } from './http/openapi.ts';
import { publicRouter } from './public/router.ts';
import { mountRoutes } from './http/registry.ts';
import type { RouteSpec } from './http/route.ts';
import { accountRoutes } from './routes/accounts.ts';
import { campaignRoutes } from './routes/campaigns.ts';
import { contactRoutes } from './routes/contacts.ts';
import { domainRoutes } from './routes/domains.ts';
import { emailRoutes } from './routes/emails.ts';
import { inboundRoutes } from './routes/inbound.ts';
import { eventRoutes } from './routes/events.ts';
import { jobRoutes } from './routes/jobs.ts';
import { segmentRoutes } from './routes/segments.ts';
import { sessionRoutes } from './routes/session.ts';
import { templateRoutes } from './routes/templates.ts';
import { workflowRoutes } from './routes/workflows.ts';
import { complaintRoutes } from './routes/complaints.ts';
import { relayRoutes } from './routes/relays.ts';
import { sendRoutes } from './routes/send.ts';
import { suppressionRoutes } from './routes/suppressions.ts';
import { trackRoutes } from './routes/track.ts';
import { webhookRoutes } from './routes/webhooks.ts';

/** Every route of the API, in mount order. The OpenAPI document is generated from this list. */
export const apiRoutes = (p: Platform): RouteSpec[] => [
  ...accountRoutes(p),
  ...sessionRoutes(p),
  ...sendRoutes(p),
  ...complaintRoutes(p),
  ...trackRoutes(p),
  ...jobRoutes(p),
  ...contactRoutes(p),
  ...eventRoutes(p),
  ...segmentRoutes(p),
  ...campaignRoutes(p),
  ...templateRoutes(p),
  ...workflowRoutes(p),
  ...domainRoutes(p),
  ...suppressionRoutes(p),
  ...emailRoutes(p),
  ...inboundRoutes(p),
  ...relayRoutes(p),
  ...webhookRoutes(p),
];

export function createApp(p: Platform): express.Express {
  const routes = apiRoutes(p);
  const openapi = openApiDocument(routes, p.config.publicUrl);
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  // The request id, the access log line and the latency histogram.
  app.use(observeRequests(p));
  // The public key is made for browser code, so /v1/track answers cross-origin calls.
  app.use('/v1/track', (req, res, next) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, Idempotency-Key, X-Request-Id');
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.setHeader('Access-Control-Expose-Headers', 'X-Request-Id, Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, Idempotent-Replayed');
    res.setHeader('Access-Control-Max-Age', '86400');
    if (req.method === 'OPTIONS') res.status(204).end();
    else next();
  });
  app.get('/health', (_req, res) => {
    res.json({ success: true, data: { status: 'ok' } });
  });
  app.get('/openapi.json', (_req, res) => {
    res.json(openapi);
  });
  if (p.metrics) app.get('/metrics', metricsEndpoint(p.metrics, p.config.metricsToken));
  app.use(docsRouter());
  // The dashboard's assets and pages (a browser navigation), ahead of the API's paths.
  app.use(dashboardRouter());

  // The pages behind the links in emails (pixel, click, subscription pages): HTML or images, no key.
  app.use(publicRouter(p));

  const router = express.Router();
  mountRoutes(router, routes, p);
  app.use(router);

  app.use((req, res) => sendError(res, new AppError('NOT_FOUND', `No route for ${req.method} ${req.path}`)));
  app.use(errorMiddleware(p.log));
  return app;
}
