import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import express, { type Response, type Router } from 'express';
import { isAppPath } from '../../../web/src/paths.ts';

/** Where `npm run build:web` puts the dashboard (scripts/build-web.ts). */
export const WEB_DIST = fileURLToPath(new URL('../../../web/dist/', import.meta.url));

/**
 * The headers of the app's HTML. Scripts only from our own origin, so an injected inline
 * script does not run; styles may be inline (the editors and the graph set style attributes);
 * no framing (clickjacking on the settings); the path of a page (which may carry a verify token)
 * is never sent to another site.
 */
const HTML_HEADERS = {
  'Content-Security-Policy': [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; '),
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
  // A new deploy's index.html names new asset files: never serve a stale one.
  'Cache-Control': 'no-cache',
};

/**
 * The dashboard: its hashed assets, cached for a year, and its index.html for a browser's
 * navigation (GET with Accept preferring HTML over JSON) to one of its pages. Everything else
 * falls through to the API, so an API client still gets the JSON envelope, the 404 one included.
 */
export function dashboardRouter(): Router {
  const router = express.Router();
  router.use('/assets', express.static(`${WEB_DIST}assets`, { immutable: true, maxAge: '365d', index: false }));
  router.use((req, res, next) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !isAppPath(req.path)) return next();
    res.vary('Accept');
    if (req.accepts(['application/json', 'text/html']) !== 'text/html') return next();
    sendIndex(res).catch(next);
  });
  return router;
}

async function sendIndex(res: Response): Promise<void> {
  res.set(HTML_HEADERS);
  let html: string;
  try {
    // Read on each navigation (a few KB): a rebuild is served without a restart.
    html = await readFile(`${WEB_DIST}index.html`, 'utf8');
  } catch {
    res.status(503).type('html').send('<!doctype html><title>mailroom</title><p>The dashboard is not built. Run <code>npm run build:web</code> and reload.</p>');
    return;
  }
  res.status(200).type('html').send(html);
}
