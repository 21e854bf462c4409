import type { Request, Response, Router } from 'express';
import { linkKey, verifyToken } from '../../../domain/mail/links.ts';
import { recordInBackground } from '../../../domain/mail/tracking.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { privateHeaders } from './html.ts';
import { notFoundPage, MAX_TOKEN } from './pages.ts';

/** A transparent 1×1 GIF (43 bytes). */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

function isHttpUrl(value: string): boolean {
  try {
    const { protocol } = new URL(value);
    return protocol === 'http:' || protocol === 'https:';
  } catch {
    return false;
  }
}

/** The target as a header value: as signed when it is plain ASCII, else in its percent-encoded form. */
const location = (url: string) => (/^[\x21-\x7e]+$/.test(url) ? url : new URL(url).href);

/**
 * The open pixel and the click redirect (`emailLinks` makes their URLs). Opens and clicks are
 * recorded after the answer has gone; only GET records (a HEAD is a link checker, not a reader).
 */
export function sendPixel(req: Request, res: Response): void {
  privateHeaders(res);
  res.status(200).setHeader('Content-Type', 'image/gif');
  res.setHeader('Content-Length', String(PIXEL.length));
  res.end(req.method === 'HEAD' ? undefined : PIXEL);
}

export function trackingRoutes(router: Router, p: Platform): void {
  const pixel = sendPixel;

  // The image answers before the token is even looked at: whatever the token, the same GIF,
  // so a pixel URL reveals nothing and never fails.
  router.get('/t/open/:token', (req, res) => {
    pixel(req, res);
    const token = req.params.token;
    if (req.method !== 'GET' || token.length > MAX_TOKEN) return;
    void linkKey(p).then(
      (key) => {
        const emailId = verifyToken(key, 'open', token);
        if (emailId) return recordInBackground(p, { kind: 'open', emailId });
      },
      (err: unknown) => p.log.error({ err }, 'email open could not be recorded: the link key is unavailable'),
    );
  });
  router.get('/t/open{/*rest}', pixel);

  // A redirect only to the exact http(s) URL the MAC was made for: never an open redirect.
  router.get('/t/click/:token', async (req, res) => {
    const token = req.params.token;
    const url = typeof req.query.u === 'string' ? req.query.u : undefined;
    const emailId =
      url !== undefined && token.length <= MAX_TOKEN && isHttpUrl(url) ? verifyToken(await linkKey(p), 'click', token, url) : null;
    if (!emailId || url === undefined) {
      notFoundPage(req, res);
      return;
    }
    privateHeaders(res);
    res.status(302).setHeader('Location', location(url));
    res.end();
    if (req.method === 'GET') void recordInBackground(p, { kind: 'click', emailId, url });
  });
  router.get('/t/click{/*rest}', notFoundPage);
}
