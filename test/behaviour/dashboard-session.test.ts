import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, verifiedUser, type ProjectAccess } from '../harness/accounts.ts';
import type { ApiResponse, CallOptions } from '../harness/client.ts';
import { startWithProject, stopDashboard } from '../harness/dashboard.ts';
import type { Instance } from '../harness/instance.ts';

/**
 * The dashboard's session: the browser holds the session in an HttpOnly cookie, never a token it
 * can read; unsafe calls carry the session's CSRF token; key routes act for the project named in
 * X-Project-Id when the user is a member of it. Bearer tokens and keys work exactly as before.
 */
let instance: Instance;
let owner: ProjectAccess;
let ownerCookie: string;
let ownerCsrf: string;

function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(code);
}

/** POST /auth/session: the Set-Cookie header's `mailroom_session=…` pair and the answer. */
async function signIn(email: string, password: string) {
  const res = await instance.api.post('/auth/session', { email, password });
  const setCookie = res.headers.getSetCookie();
  const pair = setCookie.map((c) => c.split(';')[0]).find((c) => c.startsWith('mailroom_session='));
  return { res, setCookie, cookie: pair, csrf: res.body?.data?.csrfToken as string | undefined };
}

/** A call made the way the dashboard makes it: the cookie, and whatever headers the case sends. */
const withCookie = (cookie: string, headers: Record<string, string> = {}): CallOptions => ({ headers: { cookie, ...headers } });

beforeAll(async () => {
  ({ instance, project: owner } = await startWithProject('Cookie shop'));
  const session = await signIn(owner.email, owner.password);
  ownerCookie = session.cookie!;
  ownerCsrf = session.csrf!;
});

afterAll(() => stopDashboard(undefined, instance));

describe('signing in from a browser', () => {
  it('sets an HttpOnly, SameSite=Lax session cookie and answers the user and a CSRF token, never the session token', async () => {
    const { res, setCookie, cookie, csrf } = await signIn(owner.email, owner.password);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.user).toEqual({ id: owner.userId, email: owner.email, emailVerified: true });
    expect(csrf).toMatch(/^[\w-]{20,}$/);
    expect(cookie).toMatch(/^mailroom_session=sess_/);
    const attributes = setCookie.find((c) => c.startsWith('mailroom_session='))!;
    expect(attributes).toMatch(/;\s*HttpOnly/i);
    expect(attributes).toMatch(/;\s*SameSite=Lax/i);
    expect(attributes).toMatch(/;\s*Path=\//i);
    expect(attributes).toMatch(/;\s*Max-Age=2592000/i);
    // PUBLIC_URL is http here: a Secure cookie would never come back.
    expect(attributes).not.toMatch(/;\s*Secure/i);
    expect(JSON.stringify(res.body)).not.toContain(cookie!.slice('mailroom_session='.length));
  });

  it('a wrong password is a 401 and sets no cookie', async () => {
    const { res, setCookie } = await signIn(owner.email, 'not the password');
    expectError(res, 401, 'UNAUTHORIZED');
    expect(setCookie).toEqual([]);
  });

  it('GET /auth/session answers the user and the same CSRF token with the cookie, and 401 without it', async () => {
    const res = await instance.api.get('/auth/session', withCookie(ownerCookie));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual({ user: { id: owner.userId, email: owner.email, emailVerified: true }, csrfToken: ownerCsrf });
    expectError(await instance.api.get('/auth/session'), 401, 'UNAUTHORIZED');
    expectError(await instance.api.get('/auth/session', withCookie('mailroom_session=sess_forged')), 401, 'UNAUTHORIZED');
  });
});

describe('the cookie on the session routes', () => {
  it('reads like the session token: the projects of the user', async () => {
    const res = await instance.api.get('/projects', withCookie(ownerCookie));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data.map((p: { id: string }) => p.id)).toEqual([owner.projectId]);
  });

  it('a POST without X-CSRF-Token, or with a wrong one, is 403 and creates nothing; with it, 201', async () => {
    expectError(await instance.api.post('/projects', { name: 'Forged' }, withCookie(ownerCookie)), 403, 'FORBIDDEN');
    expectError(await instance.api.post('/projects', { name: 'Forged' }, withCookie(ownerCookie, { 'x-csrf-token': 'x'.repeat(43) })), 403, 'FORBIDDEN');
    const listed = await instance.api.get('/projects', withCookie(ownerCookie));
    expect(listed.body.data.map((p: { name: string }) => p.name)).toEqual(['Cookie shop']);

    const created = await instance.api.post('/projects', { name: 'Second shop' }, withCookie(ownerCookie, { 'x-csrf-token': ownerCsrf }));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
  });

  it("the CSRF token is bound to its session: another session's token is refused", async () => {
    const other = await verifiedUser(instance);
    const { csrf: otherCsrf } = await signIn(other.email, other.password);
    expect(otherCsrf).not.toBe(ownerCsrf);
    const res = await instance.api.patch(`/projects/${owner.projectId}`, { name: 'Renamed' }, withCookie(ownerCookie, { 'x-csrf-token': otherCsrf! }));
    expectError(res, 403, 'FORBIDDEN');
    const project = await instance.api.get(`/projects/${owner.projectId}`, withCookie(ownerCookie));
    expect(project.body.data.name).toBe('Cookie shop');
  });

  it('a safe method needs no CSRF token (GET cannot change anything)', async () => {
    const res = await instance.api.get(`/projects/${owner.projectId}/members`, withCookie(ownerCookie));
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});

describe('the cookie on the secret-key routes', () => {
  it('acts as the secret key of the project in X-Project-Id when the user is a member', async () => {
    const headers = { 'x-project-id': owner.projectId, 'x-csrf-token': ownerCsrf };
    const created = await instance.api.post('/contacts', { email: 'ann@example.com' }, withCookie(ownerCookie, headers));
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // The same contact through the secret key: one project, two ways in.
    const viaKey = await owner.api.get(`/contacts/${created.body.data.id}`);
    expect(viaKey.status).toBe(200);
    expect(viaKey.body.data.email).toBe('ann@example.com');
  });

  it('without X-Project-Id is 403, and the message says what to send', async () => {
    const res = await instance.api.get('/contacts', withCookie(ownerCookie));
    expectError(res, 403, 'FORBIDDEN');
    expect(res.body.error.message).toContain('X-Project-Id');
  });

  it("a project the user is not a member of is 403, and nothing of it shows or changes", async () => {
    const stranger = await newProject(instance, 'Not yours');
    await stranger.api.post('/contacts', { email: 'secret@example.com' });
    const read = await instance.api.get('/contacts', withCookie(ownerCookie, { 'x-project-id': stranger.projectId }));
    expectError(read, 403, 'FORBIDDEN');
    expect(JSON.stringify(read.body)).not.toContain('secret@example.com');
    const write = await instance.api.post(
      '/contacts',
      { email: 'planted@example.com' },
      withCookie(ownerCookie, { 'x-project-id': stranger.projectId, 'x-csrf-token': ownerCsrf }),
    );
    expectError(write, 403, 'FORBIDDEN');
    const contacts = await stranger.api.get('/contacts');
    expect(contacts.body.data.contacts.map((c: { email: string }) => c.email)).toEqual(['secret@example.com']);
  });

  it('an unsafe call without X-CSRF-Token is 403 and changes nothing', async () => {
    const res = await instance.api.post('/contacts', { email: 'forged@example.com' }, withCookie(ownerCookie, { 'x-project-id': owner.projectId }));
    expectError(res, 403, 'FORBIDDEN');
    const contacts = await owner.api.get('/contacts');
    expect(JSON.stringify(contacts.body.data.contacts)).not.toContain('forged@example.com');
  });

  it('without a live session is 401', async () => {
    const res = await instance.api.get('/contacts', withCookie('mailroom_session=sess_forged', { 'x-project-id': owner.projectId }));
    expectError(res, 401, 'UNAUTHORIZED');
  });
});

describe('roles through the cookie', () => {
  it('a MEMBER works with the data but is refused the admin actions (403), which change nothing', async () => {
    const member = await verifiedUser(instance);
    const added = await instance.api.post(`/projects/${owner.projectId}/members`, { email: member.email, role: 'MEMBER' }, { auth: owner.token });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const { cookie, csrf } = await signIn(member.email, member.password);
    const as = (headers: Record<string, string> = {}) => withCookie(cookie!, { 'x-csrf-token': csrf!, ...headers });

    const contacts = await instance.api.get('/contacts', as({ 'x-project-id': owner.projectId }));
    expect(contacts.status, JSON.stringify(contacts.body)).toBe(200);

    expectError(await instance.api.post(`/projects/${owner.projectId}/keys/rotate`, undefined, as()), 403, 'FORBIDDEN');
    expectError(await instance.api.patch(`/projects/${owner.projectId}`, { name: 'Mine now' }, as()), 403, 'FORBIDDEN');
    // The owner's key still works: nothing was rotated.
    expect((await owner.api.get('/contacts')).status).toBe(200);
  });
});

describe('signing out', () => {
  it('DELETE /auth/session ends the session on the server and clears the cookie', async () => {
    const { cookie, csrf } = await signIn(owner.email, owner.password);
    expectError(await instance.api.delete('/auth/session', undefined, withCookie(cookie!)), 403, 'FORBIDDEN');
    expect((await instance.api.get('/auth/session', withCookie(cookie!))).status).toBe(200);

    const res = await instance.api.delete('/auth/session', undefined, withCookie(cookie!, { 'x-csrf-token': csrf! }));
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    const cleared = res.headers.getSetCookie().find((c) => c.startsWith('mailroom_session='));
    expect(cleared).toMatch(/^mailroom_session=;.*Expires=Thu, 01 Jan 1970/i);
    // A copy of the cookie kept elsewhere is worth nothing now.
    expectError(await instance.api.get('/auth/session', withCookie(cookie!)), 401, 'UNAUTHORIZED');
    expectError(await instance.api.get('/contacts', withCookie(cookie!, { 'x-project-id': owner.projectId })), 401, 'UNAUTHORIZED');
  });

  it('POST /auth/logout with the cookie ends that session too', async () => {
    const { cookie, csrf } = await signIn(owner.email, owner.password);
    const res = await instance.api.post('/auth/logout', undefined, withCookie(cookie!, { 'x-csrf-token': csrf! }));
    expect(res.status, JSON.stringify(res.body)).toBe(204);
    expectError(await instance.api.get('/auth/session', withCookie(cookie!)), 401, 'UNAUTHORIZED');
  });
});

describe('bearer credentials are unchanged', () => {
  it('an Authorization header is used instead of the cookie, and needs no CSRF token', async () => {
    // A bad bearer is refused even beside a good cookie: the header is the caller's explicit choice.
    expectError(await instance.api.get('/projects', { auth: 'sess_forged', headers: { cookie: ownerCookie } }), 401, 'UNAUTHORIZED');
    const created = await instance.api.post('/projects', { name: 'Via token' }, { auth: owner.token, headers: { cookie: ownerCookie } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const contact = await owner.api.post('/contacts', { email: 'bearer@example.com' });
    expect(contact.status, JSON.stringify(contact.body)).toBe(201);
  });
});
