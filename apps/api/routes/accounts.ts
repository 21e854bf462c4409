import { z } from 'zod';
import { addMember, createProject, getProject, listMembers, listProjects, rotateKeys, updateProject } from '../../../domain/accounts/projects.ts';
import { login, logout, resendVerification, signup, verifyEmail } from '../../../domain/accounts/users.ts';
import { credentialsSchema, publicUserSchema, newMemberSchema, newProjectSchema, projectPatchSchema, roleSchema, signInSchema } from '../../../domain/accounts/schema.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { sessionTokenOf } from '../http/auth.ts';
import { route, type RouteSpec } from '../http/route.ts';
import { idParams } from './common.ts';

const user = publicUserSchema;
const project = z.object({
  id: z.string(),
  name: z.string(),
  language: z.string(),
  address: z.string().describe('Postal address printed in the footer of marketing email ("" until set)'),
  footer: z.boolean().describe('Whether marketing email ends with the footer (unsubscribe and preference links, the address)'),
  createdAt: z.string(),
});
const projectWithKeys = project.extend({ secretKey: z.string(), publicKey: z.string() });
const member = z.object({ userId: z.string(), email: z.string(), role: roleSchema });

export function accountRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'post', path: '/auth/signup', tag: 'Accounts', auth: 'none', status: 201,
      summary:
        'Create an account; a verification email is sent to the address. An address that already has an account gets the same ' +
        'answer (with an id and token that work nowhere) and its owner an email instead, so signup does not tell which addresses have accounts',
      body: credentialsSchema,
      response: z.object({ user, token: z.string() }),
      handle: ({ body }) => signup(p, body.email, body.password),
    }),
    route({
      method: 'get', path: '/auth/verify', tag: 'Accounts', auth: 'none', errors: [404],
      summary: 'Verify an email address with the token from the verification link',
      query: z.object({ token: z.string().min(1).max(200) }),
      response: z.object({ verified: z.literal(true), user }),
      handle: async ({ query }) => ({ verified: true as const, user: await verifyEmail(p, query.token) }),
    }),
    route({
      method: 'post', path: '/auth/verify/resend', tag: 'Accounts', auth: 'user', status: 202, errors: [409, 429],
      summary: 'Send the verification email again (one per VERIFICATION_RESEND_SECONDS; earlier links stop working)',
      response: z.object({ sent: z.literal(true) }),
      handle: async ({ auth }) => {
        await resendVerification(p, auth.userId);
        return { sent: true as const };
      },
    }),
    route({
      method: 'post', path: '/auth/login', tag: 'Accounts', auth: 'none', errors: [401, 429],
      summary:
        'Sign in; returns a session token for the user endpoints. Failed attempts are throttled per address asked for and per ' +
        'client address (429 with Retry-After; tiers in docs/decisions.md); a success forgets the account\'s failures',
      body: signInSchema,
      response: z.object({ token: z.string(), user }),
      handle: ({ body, req }) => login(p, body.email, body.password, req.ip ?? ''),
    }),
    route({
      method: 'post', path: '/auth/logout', tag: 'Accounts', auth: 'user', status: 204,
      summary: 'End the session of the token used',
      handle: async ({ req }) => logout(p, sessionTokenOf(req)!),
    }),
    route({
      method: 'get', path: '/auth/me', tag: 'Accounts', auth: 'user',
      summary: 'The signed-in user',
      response: user,
      handle: async ({ auth }) => ({ id: auth.userId, email: auth.email, emailVerified: auth.emailVerified }),
    }),
    route({
      method: 'post', path: '/projects', tag: 'Projects', auth: 'user', status: 201,
      summary: 'Create a project; the caller becomes its admin. The keys are shown only here and on rotation',
      body: newProjectSchema,
      response: projectWithKeys,
      handle: ({ auth, body }) => createProject(p, auth.userId, body.name, body.language),
    }),
    route({
      method: 'get', path: '/projects', tag: 'Projects', auth: 'user',
      summary: "The caller's projects with the caller's role",
      response: z.array(project.extend({ role: roleSchema })),
      handle: ({ auth }) => listProjects(p, auth.userId),
    }),
    route({
      method: 'get', path: '/projects/:id', tag: 'Projects', auth: 'user', errors: [404],
      summary: 'One project of the caller',
      params: idParams,
      response: project.extend({ role: roleSchema }),
      handle: ({ auth, params }) => getProject(p, params.id, auth.userId),
    }),
    route({
      method: 'patch', path: '/projects/:id', tag: 'Projects', auth: 'user', errors: [404], needs: { admin: true },
      summary:
        'Rename a project, change its default language, or set the footer of its marketing email: the postal address ' +
        '(lines separated by line breaks; "" removes it) and whether the footer is added at all (admin)',
      params: idParams,
      body: projectPatchSchema,
      response: project,
      handle: ({ auth, params, body }) => updateProject(p, params.id, auth.userId, body),
    }),
    route({
      method: 'post', path: '/projects/:id/keys/rotate', tag: 'Projects', auth: 'user', errors: [404], needs: { admin: true },
      summary: 'Issue new secret and public keys; the old ones stop working at once (admin)',
      params: idParams,
      response: projectWithKeys,
      handle: ({ auth, params }) => rotateKeys(p, params.id, auth.userId),
    }),
    route({
      method: 'post', path: '/projects/:id/members', tag: 'Projects', auth: 'user', status: 201, errors: [404, 409], needs: { admin: true },
      summary: 'Add a signed-up user to the project, or change their role (admin)',
      params: idParams,
      body: newMemberSchema,
      response: member,
      handle: ({ auth, params, body }) => addMember(p, params.id, auth.userId, body.email, body.role),
    }),
    route({
      method: 'get', path: '/projects/:id/members', tag: 'Projects', auth: 'user', errors: [404],
      summary: 'Members of the project',
      params: idParams,
      response: z.array(member),
      handle: ({ auth, params }) => listMembers(p, params.id, auth.userId),
    }),
  ];
}
