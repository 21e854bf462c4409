import express, { type ErrorRequestHandler, type Router } from 'express';
import type { Platform } from '../../../runtime/platform.ts';
import { errorPage, notFoundPage, subscriptionRoutes } from './pages.ts';
import { sendPixel, trackingRoutes } from './tracking.ts';

/**
 * What the links in an email lead to: the open pixel, the click redirect and the subscription
 * pages. Public (the signed token is the credential), answered in HTML or as an image rather than
 * the JSON envelope, and outside the per-project API budget (each link has its own guard).
 */
export function publicRouter(p: Platform): Router {
  const router = express.Router();
  trackingRoutes(router, p);
  subscriptionRoutes(router, p);
  const onError: ErrorRequestHandler = (err, req, res, _next) => {
    if (res.headersSent) {
      p.log.error({ err, requestId: res.locals.requestId, path: req.path }, 'public page failed after answering');
      return;
    }
    // The pixel is an image whatever happens.
    if (req.path.startsWith('/t/open')) return sendPixel(req, res);
    // A path that cannot even be decoded is a broken link, not our failure.
    if ((err as { status?: number }).status === 400) return notFoundPage(req, res);
    p.log.error({ err, requestId: res.locals.requestId, path: req.path }, 'public page failed');
    errorPage(req, res);
  };
  router.use(onError);
  return router;
}
