import type { Request, Response } from 'express';
import { SESSION_DAYS } from '../../../domain/accounts/users.ts';

/**
 * The dashboard's session: the session token in an HttpOnly cookie (page scripts never see it),
 * SameSite=Lax (not sent on cross-site POSTs, still sent when a link from an email opens the app),
 * Secure when PUBLIC_URL is https.
 */
export const SESSION_COOKIE = 'mailroom_session';

/** The session token the request's cookie carries, if any. */
export function sessionCookie(req: Request): string | undefined {
  for (const part of (req.get('cookie') ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === SESSION_COOKIE) {
      const value = part.slice(at + 1).trim();
      return value || undefined;
    }
  }
  return undefined;
}

const attributes = (secure: boolean) => ({ httpOnly: true, sameSite: 'lax' as const, secure, path: '/' });

export function setSessionCookie(res: Response, token: string, publicUrl: string): void {
  res.cookie(SESSION_COOKIE, token, { ...attributes(isHttps(publicUrl)), maxAge: SESSION_DAYS * 86_400_000 });
}

export function clearSessionCookie(res: Response, publicUrl: string): void {
  res.clearCookie(SESSION_COOKIE, attributes(isHttps(publicUrl)));
}

const isHttps = (publicUrl: string) => publicUrl.startsWith('https:');
