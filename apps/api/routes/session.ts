import { z } from 'zod';
import { csrfTokenFor } from '../../../domain/accounts/csrf.ts';
import { publicUserSchema, signInSchema } from '../../../domain/accounts/schema.ts';
import { login, logout, publicUser, userForSession } from '../../../domain/accounts/users.ts';
import { AppError } from '../../../domain/errors.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { sessionTokenOf } from '../http/auth.ts';
import { route, type RouteSpec } from '../http/route.ts';
import { clearSessionCookie, setSessionCookie } from '../http/session-cookie.ts';

const user = publicUserSchema;
const session = z.object({
  user,
  csrfToken: z.string().describe('Send it as X-CSRF-Token on every POST, PUT, PATCH and DELETE made with the session cookie'),
});

const COOKIE_RULES =
  'The dashboard\'s session lives in the HttpOnly cookie `mailroom_session` (SameSite=Lax, Secure when PUBLIC_URL is https); ' +
  'the token is never in a body. With the cookie, every session route works, and every secret-key route works too for the ' +
  'project named in `X-Project-Id` when the user is a member of it (403 otherwise). POST, PUT, PATCH and DELETE with the ' +
  'cookie need `X-CSRF-Token` (403 without it). An Authorization header, when present, is used instead of the cookie.';

/** Sign-in for the browser: the session in a cookie, the CSRF token in the body. */
export function sessionRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'post', path: '/auth/session', tag: 'Accounts', auth: 'none', errors: [401, 429],
      summary: 'Sign in from a browser: sets the session cookie and answers the user and the CSRF token',
      description: `${COOKIE_RULES} Failed attempts are throttled as on POST /auth/login.`,
      body: signInSchema,
      response: session,
      handle: async ({ body, req, res }) => {
        const { token, user: signedIn } = await login(p, body.email, body.password, req.ip ?? '');
        setSessionCookie(res, token, p.config.publicUrl);
        return { user: signedIn, csrfToken: csrfTokenFor(token) };
      },
    }),
    route({
      method: 'get', path: '/auth/session', tag: 'Accounts', auth: 'user',
      summary: 'The signed-in user and the CSRF token of the session (401 when signed out)',
      description: COOKIE_RULES,
      response: session,
      handle: async ({ req }) => {
        const token = sessionTokenOf(req)!;
        const found = await userForSession(p, token);
        if (!found) throw new AppError('UNAUTHORIZED', 'Your session has expired or you signed out');
        return { user: publicUser(found), csrfToken: csrfTokenFor(token) };
      },
    }),
    route({
      method: 'delete', path: '/auth/session', tag: 'Accounts', auth: 'user', status: 204,
      summary: 'Sign out: the session ends on the server and the cookie is cleared',
      description: COOKIE_RULES,
      handle: async ({ req, res }) => {
        await logout(p, sessionTokenOf(req)!);
        clearSessionCookie(res, p.config.publicUrl);
      },
    }),
  ];
}
