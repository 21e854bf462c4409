import type { Request, RequestHandler } from 'express';
import { csrfTokenMatches } from '../../../domain/accounts/csrf.ts';
import { projectForKey, roleIn } from '../../../domain/accounts/projects.ts';
import { userForSession } from '../../../domain/accounts/users.ts';
import { AppError } from '../../../domain/errors.ts';
import type { Platform } from '../../../runtime/platform.ts';
import type { AuthKind, KeyAuth, UserAuth } from './route.ts';
import { sessionCookie } from './session-cookie.ts';

function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

/** The session token of a request: its Bearer token, else its session cookie. */
export const sessionTokenOf = (req: Request): string | undefined => bearer(req.get('authorization')) ?? sessionCookie(req);

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Resolves the credential a route asks for, or throws 401/403 in the envelope. An Authorization
 * header is used as it is; without one, the dashboard's session cookie stands in for both the
 * session token and (with X-Project-Id) the secret key.
 */
export async function authenticate(p: Platform, req: Request, kind: AuthKind): Promise<KeyAuth | UserAuth | undefined> {
  if (kind === 'none') return undefined;
  const header = req.get('authorization');
  const cookie = header === undefined ? sessionCookie(req) : undefined;
  if (cookie !== undefined) return authenticateCookie(p, req, cookie, kind);
  const token = bearer(header);
  if (!token) throw new AppError('UNAUTHORIZED', 'Missing Authorization: Bearer credential');

  if (kind === 'user') {
    const user = token.startsWith('sess_') ? await userForSession(p, token) : null;
    if (!user) throw new AppError('UNAUTHORIZED', 'Invalid or expired session token');
    return { kind: 'user', userId: user._id, email: user.email, emailVerified: user.emailVerified };
  }

  const found = await projectForKey(p, token);
  if (!found) throw new AppError('UNAUTHORIZED', 'Invalid API key');
  if (kind === 'secret' && found.keyKind !== 'secret') {
    throw new AppError('FORBIDDEN', 'A public key can only be used with POST /v1/track', {
      suggestion: 'Use the project secret key (sk_…) from server-side code.',
    });
  }
  return { kind: 'key', projectId: found.projectId, keyKind: found.keyKind };
}

/**
 * A dashboard call: a live session (401 otherwise); on an unsafe method, the session's CSRF token
 * in X-CSRF-Token (403), since a browser sends the cookie whoever made the page; on a key route,
 * X-Project-Id naming a project the user is a member of (403), for which the call acts as the
 * secret key would. Roles matter only where they do for session calls (the domain checks them).
 */
async function authenticateCookie(p: Platform, req: Request, token: string, kind: AuthKind): Promise<KeyAuth | UserAuth> {
  const user = token.startsWith('sess_') ? await userForSession(p, token) : null;
  if (!user) throw new AppError('UNAUTHORIZED', 'Your session has expired or you signed out', { suggestion: 'Sign in again.' });
  if (!SAFE_METHODS.has(req.method) && !csrfTokenMatches(token, req.get('x-csrf-token'))) {
    throw new AppError('FORBIDDEN', 'A call with the session cookie must carry X-CSRF-Token', {
      suggestion: 'Send the csrfToken that GET /auth/session answers in the X-CSRF-Token header.',
    });
  }
  if (kind === 'user') return { kind: 'user', userId: user._id, email: user.email, emailVerified: user.emailVerified };
  const projectId = req.get('x-project-id');
  if (!projectId) {
    throw new AppError('FORBIDDEN', 'A call with the session cookie must name its project in X-Project-Id', {
      suggestion: 'Send the id of one of your projects (GET /projects) in the X-Project-Id header.',
    });
  }
  if (!(await roleIn(p, projectId, user._id))) throw new AppError('FORBIDDEN', 'You are not a member of this project');
  return { kind: 'key', projectId, keyKind: 'secret', userId: user._id };
}

/**
 * The per-project request budget (API_RATE_PER_MINUTE). Key calls draw from their project's
 * budget, session calls (the dashboard's included) from their user's, anonymous calls (signup,
 * login) from their address's.
 */
export function rateLimitFor(p: Platform): RequestHandler {
  const limit = p.config.apiRatePerMinute;
  return async (req, res, next) => {
    if (limit <= 0) return next();
    const auth = res.locals.auth as KeyAuth | UserAuth | undefined;
    const bucket = auth?.userId ? `user:${auth.userId}` : auth?.kind === 'key' ? `project:${auth.projectId}` : `ip:${req.ip}`;
    const decision = await p.limiter.consume(`api:${bucket}`, limit, 60_000);
    res.setHeader('X-RateLimit-Limit', String(limit));
    res.setHeader('X-RateLimit-Remaining', String(Math.max(0, decision.remaining)));
    if (!decision.allowed) {
      throw new AppError('RATE_LIMIT_EXCEEDED', `More than ${limit} requests per minute`, {
        retryAfter: Math.max(1, Math.ceil(decision.retryAfterMs / 1000)),
      });
    }
    next();
  };
}
