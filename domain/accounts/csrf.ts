import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * The CSRF token of a session: an HMAC keyed by the session token itself. Only a page that was
 * told it (GET|POST /auth/session) can send it, a cross-site page cannot read the HttpOnly
 * cookie to compute it, it needs no server secret (every replica, every restart agrees), and it
 * dies with the session.
 */
export const csrfTokenFor = (sessionToken: string): string =>
  createHmac('sha256', sessionToken).update('mailroom csrf v1').digest('base64url');

export function csrfTokenMatches(sessionToken: string, sent: string | undefined): boolean {
  if (!sent) return false;
  const expected = Buffer.from(csrfTokenFor(sessionToken));
  const given = Buffer.from(sent);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
