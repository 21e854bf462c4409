import type { RequestHandler } from 'express';
import { projectForKey } from '../../../domain/accounts/projects.ts';
import { userForSession } from '../../../domain/accounts/users.ts';
import { AppError } from '../../../domain/errors.ts';
import type { Platform } from '../../../runtime/platform.ts';
import type { AuthKind, KeyAuth, UserAuth } from './route.ts';

function bearer(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '');
  return match?.[1];
}

/** Resolves the credential a route asks for, or throws 401/403 in the envelope. */
export async function authenticate(
  p: Platform,
  header: string | undefined,
  kind: AuthKind,
): Promise<KeyAuth | UserAuth | undefined> {
  if (kind === 'none') return undefined;
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
 * The per-project request budget (API_RATE_PER_MINUTE). Key calls draw from their project's
 * budget, session calls from their user's, anonymous calls (signup, login) from their address's.
 */
export function rateLimitFor(p: Platform): RequestHandler {
  const limit = p.config.apiRatePerMinute;
  return async (req, res, next) => {
    if (limit <= 0) return next();
    const auth = res.locals.auth as KeyAuth | UserAuth | undefined;
    const bucket = auth?.kind === 'key' ? `project:${auth.projectId}` : auth?.kind === 'user' ? `user:${auth.userId}` : `ip:${req.ip}`;
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
