import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, verifiedUser } from '../harness/accounts.ts';
import { eventually, type ApiResponse } from '../harness/client.ts';
import { startInstance, type Instance } from '../harness/instance.ts';
import type { ReceivedMessage } from '../harness/smtp-sink.ts';

const PASSWORD = 'correct horse battery';
let seq = 0;
const uniqueEmail = (tag: string) => `${tag}-${++seq}-${Date.now()}@example.com`;

/** The error envelope of DESIGN.md / the spec, with the status and code asserted. */
function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.statusCode).toBe(status);
  expect(res.body.error.requestId).toBe(res.headers.get('x-request-id'));
}

/**
 * Each throttling test signs in from an address of its own: every 127.x.y.z is this machine, and
 * the API counts failed sign-ins per client address.
 */
let addressSeq = 1;
const clientAddress = () => `127.0.${Math.floor(++addressSeq / 250) + 1}.${(addressSeq % 250) + 1}`;

/** POST /auth/login from `localAddress`, read like the client's answers. */
function loginFrom(baseUrl: string, localAddress: string, body: { email: string; password: string }): Promise<ApiResponse> {
  const url = new URL('/auth/login', baseUrl);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', localAddress, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') headers.set(name, value);
        resolve({ status: res.statusCode!, headers, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const fieldsOf = (res: ApiResponse): string[] => res.body.error.errors.map((e: { field: string }) => e.field);

describe.concurrent('accounts, projects and keys', () => {
  // Links in emails are built from PUBLIC_URL, not from the address the API listens on; the
  // trailing slash must not produce `//auth/verify`.
  const PUBLIC_URL = 'https://mailroom.example.test';
  let instance: Instance;
  beforeAll(async () => {
    instance = await startInstance({ env: { PUBLIC_URL: `${PUBLIC_URL}/`, VERIFICATION_RESEND_SECONDS: '2' } });
  });
  afterAll(() => instance.dispose());

  const verificationMail = (email: string): Promise<ReceivedMessage> =>
    instance.smtp.waitFor((m) => m.rcptTo.includes(email) && /verify/i.test(m.parsed.subject ?? ''));

  /** Every verification link sent to `email` so far (the sink keeps all messages). */
  const linksSentTo = (email: string): string[] =>
    instance.smtp.messages
      .filter((m) => m.rcptTo.includes(email))
      .flatMap((m) => [...(m.parsed.text ?? '').matchAll(/https?:\/\/\S+\/auth\/verify\?token=[\w%-]+/g)].map((x) => x[0]));

  const pathOf = (link: string) => link.slice(link.indexOf('/auth/'));

  async function signup(email = uniqueEmail('user'), password = PASSWORD) {
    const res = await instance.api.post('/auth/signup', { email, password });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return { email, password, token: res.body.data.token as string, userId: res.body.data.user.id as string };
  }

  describe('signup and email verification', () => {
    it('signup answers 201 with the unverified user and a session token, and nothing secret', async () => {
      const email = uniqueEmail('shape');
      const res = await instance.api.post('/auth/signup', { email, password: PASSWORD });
      expect(res.status).toBe(201);
      expect(res.body.success).toBe(true);
      expect(Object.keys(res.body.data).sort()).toEqual(['token', 'user']);
      expect(res.body.data.user).toEqual({ id: expect.any(String), email, emailVerified: false });
      expect(res.body.data.token).toEqual(expect.any(String));
      expect(JSON.stringify(res.body)).not.toMatch(/hash|password/i);

      // The token is a working session for that user.
      const me = await instance.api.get('/auth/me', { auth: res.body.data.token });
      expect(me.status).toBe(200);
      expect(me.body.data).toEqual({ id: res.body.data.user.id, email, emailVerified: false });
    });

    it('sends a verification email over SMTP with a PUBLIC_URL/auth/verify?token=… link', async () => {
      const { email } = await signup();
      const mail = await verificationMail(email);
      expect(mail.rcptTo).toEqual([email]);
      expect(mail.parsed.to?.map((a) => a.address)).toEqual([email]);
      const [link] = linksSentTo(email);
      expect(link).toMatch(/^https:\/\/mailroom\.example\.test\/auth\/verify\?token=[\w%-]{16,}$/);
      expect(mail.parsed.html ?? '').toContain(link);
    });

    it('opening the link verifies the address, as GET /auth/me then shows', async () => {
      const { email, token, userId } = await signup();
      expect((await instance.api.get('/auth/me', { auth: token })).body.data.emailVerified).toBe(false);

      await verificationMail(email);
      const [link] = linksSentTo(email);
      const verified = await instance.api.get(pathOf(link!));
      expect(verified.status).toBe(200);
      expect(verified.body.data.user).toEqual({ id: userId, email, emailVerified: true });

      // The session opened before verification sees the change too.
      const me = await instance.api.get('/auth/me', { auth: token });
      expect(me.body.data).toEqual({ id: userId, email, emailVerified: true });
    });

    it('a verification link works once; a used or made-up token is a 404 in the envelope', async () => {
      const { email, token } = await signup();
      await verificationMail(email);
      const [link] = linksSentTo(email);
      expect((await instance.api.get(pathOf(link!))).status).toBe(200);

      expectError(await instance.api.get(pathOf(link!)), 404, 'NOT_FOUND');
      expectError(await instance.api.get('/auth/verify?token=ver_madeUpTokenThatWasNeverIssued'), 404, 'NOT_FOUND');
      // Still verified: a refused link does not undo anything.
      expect((await instance.api.get('/auth/me', { auth: token })).body.data.emailVerified).toBe(true);
    });

    it('a made-up token verifies nobody', async () => {
      const { token } = await signup();
      expectError(await instance.api.get('/auth/verify?token=ver_guess'), 404, 'NOT_FOUND');
      expect((await instance.api.get('/auth/me', { auth: token })).body.data.emailVerified).toBe(false);
    });

    it('resending the verification email sends a new working link, at most one per VERIFICATION_RESEND_SECONDS, and is refused once verified', async () => {
      const { email, token } = await signup();
      await verificationMail(email);
      // Right after the signup's email: refused, with when to ask again, and nothing sent.
      const early = await instance.api.post('/auth/verify/resend', undefined, { auth: token });
      expectError(early, 429, 'RATE_LIMIT_EXCEEDED');
      expect(Number(early.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      await new Promise((resolve) => setTimeout(resolve, 2_100));
      const resent = await instance.api.post('/auth/verify/resend', undefined, { auth: token });
      expect(resent.status).toBe(202);
      expectError(await instance.api.post('/auth/verify/resend', undefined, { auth: token }), 429, 'RATE_LIMIT_EXCEEDED');
      const links = await eventually(
        async () => {
          const found = linksSentTo(email);
          return found.length >= 2 ? found : undefined;
        },
        10_000,
        'a second verification email',
      );
      expect(new Set(links).size).toBe(2);
      expect(linksSentTo(email)).toHaveLength(2); // the refused calls sent nothing
      expectError(await instance.api.get(pathOf(links[0]!)), 404, 'NOT_FOUND'); // the older link no longer verifies
      expect((await instance.api.get(pathOf(links[1]!))).status).toBe(200);
      expect((await instance.api.get('/auth/me', { auth: token })).body.data.emailVerified).toBe(true);
      expectError(await instance.api.post('/auth/verify/resend', undefined, { auth: token }), 409, 'CONFLICT');
    });
  });

  describe('signup rules', () => {
    it('a signup with an address that has an account answers like a new one, creates nothing, and emails the owner instead', async () => {
      const first = await signup();
      await verificationMail(first.email);
      const fresh = await instance.api.post('/auth/signup', { email: uniqueEmail('fresh'), password: PASSWORD });
      const again = await instance.api.post('/auth/signup', { email: first.email, password: 'another password 1' });
      const shouted = await instance.api.post('/auth/signup', { email: first.email.toUpperCase(), password: 'another password 2' });
      for (const res of [again, shouted]) {
        // The same answer as a real signup, field for field: nothing tells the address has an account.
        expect(res.status, JSON.stringify(res.body)).toBe(201);
        expect(Object.keys(res.body)).toEqual(Object.keys(fresh.body));
        expect(Object.keys(res.body.data).sort()).toEqual(['token', 'user']);
        expect(res.body.data.user).toEqual({ id: expect.any(String), email: first.email, emailVerified: false });
        expect(res.body.data.user.id).not.toBe(first.userId);
        expect(res.body.data.user.id).toMatch(new RegExp(`^[\\w-]{${fresh.body.data.user.id.length}}$`));
        expect(res.body.data.token).toMatch(new RegExp(`^sess_[\\w-]{${fresh.body.data.token.length - 5}}$`));
        // Its token and id work nowhere.
        expectError(await instance.api.get('/auth/me', { auth: res.body.data.token }), 401, 'UNAUTHORIZED');
        expectError(await instance.api.post('/projects', { name: 'Takeover' }, { auth: res.body.data.token }), 401, 'UNAUTHORIZED');
      }

      // The owner hears of it, once however many tries (an inbox must not be flooded), with where to sign in.
      const notice = await instance.smtp.waitFor((m) => m.rcptTo.includes(first.email) && /tried to sign up/i.test(m.parsed.subject ?? ''));
      expect(notice.parsed.text).toContain(`${PUBLIC_URL}/docs`);
      expect(notice.parsed.text).toMatch(/already has one/);
      expect(notice.parsed.html).toContain(`<a href="${PUBLIC_URL}/docs">`);
      expect(notice.parsed.text).not.toMatch(/another password/);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(instance.smtp.messages.filter((m) => m.rcptTo.includes(first.email) && /tried to sign up/i.test(m.parsed.subject ?? ''))).toHaveLength(1);
      // No verification email either: only the first signup's.
      expect(linksSentTo(first.email)).toHaveLength(1);

      // The original account is untouched: its password still works, the new ones do not.
      const login = await instance.api.post('/auth/login', { email: first.email, password: PASSWORD });
      expect(login.status).toBe(200);
      expect(login.body.data.user.id).toBe(first.userId);
      expectError(await instance.api.post('/auth/login', { email: first.email, password: 'another password 1' }), 401, 'UNAUTHORIZED');
      expectError(await instance.api.post('/auth/login', { email: first.email, password: 'another password 2' }), 401, 'UNAUTHORIZED');
    });

    it('two simultaneous signups with one email create exactly one account', async () => {
      const email = uniqueEmail('race');
      const passwords = ['first password', 'second password'];
      const results = await Promise.all(passwords.map((password) => instance.api.post('/auth/signup', { email, password })));
      expect(results.map((r) => r.status)).toEqual([201, 201]);
      const sessions = await Promise.all(results.map((r) => instance.api.get('/auth/me', { auth: r.body.data.token })));
      expect(sessions.map((me) => me.status).sort()).toEqual([200, 401]);
      const winner = sessions.findIndex((me) => me.status === 200);
      expect((await instance.api.post('/auth/login', { email, password: passwords[winner] })).status).toBe(200);
      expect((await instance.api.post('/auth/login', { email, password: passwords[1 - winner] })).status).toBe(401);
    });

    it('emails are stored lower-cased and trimmed, and login ignores their case', async () => {
      const email = uniqueEmail('Mixed.Case');
      const res = await instance.api.post('/auth/signup', { email: `  ${email.toUpperCase()} `, password: PASSWORD });
      expect(res.status).toBe(201);
      expect(res.body.data.user.email).toBe(email.toLowerCase());
      await verificationMail(email.toLowerCase());
      const login = await instance.api.post('/auth/login', { email: email.toUpperCase(), password: PASSWORD });
      expect(login.status).toBe(200);
      expect(login.body.data.user.id).toBe(res.body.data.user.id);
    });

    it('a bad email and a short password are a 422 naming both fields, and create nothing', async () => {
      const both = await instance.api.post('/auth/signup', { email: 'not-an-email', password: 'short' });
      expectError(both, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(both).sort()).toEqual(['email', 'password']);
      for (const e of both.body.error.errors) {
        expect(e).toEqual({ field: expect.any(String), message: expect.any(String), code: expect.any(String) });
        expect(e.message.length).toBeGreaterThan(0);
      }

      const email = uniqueEmail('short');
      const short = await instance.api.post('/auth/signup', { email, password: '1234567' });
      expectError(short, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(short)).toEqual(['password']);
      // Nothing was created: the address is still free, and 8 characters are enough.
      expect((await instance.api.post('/auth/signup', { email, password: '12345678' })).status).toBe(201);

      const missing = await instance.api.post('/auth/signup', {});
      expectError(missing, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(missing).sort()).toEqual(['email', 'password']);
    });
  });

  describe('login and logout', () => {
    it('the right password gives a fresh session token for the user', async () => {
      const user = await signup();
      const login = await instance.api.post('/auth/login', { email: user.email, password: PASSWORD });
      expect(login.status).toBe(200);
      expect(login.body.success).toBe(true);
      expect(Object.keys(login.body.data).sort()).toEqual(['token', 'user']);
      expect(login.body.data.user).toEqual({ id: user.userId, email: user.email, emailVerified: false });
      expect(JSON.stringify(login.body)).not.toMatch(/hash|password/i);
      expect(login.body.data.token).not.toBe(user.token);
      const me = await instance.api.get('/auth/me', { auth: login.body.data.token });
      expect(me.body.data.id).toBe(user.userId);
    });

    it('a wrong password and an unknown email get the same 401, so accounts cannot be probed', async () => {
      const user = await signup();
      const wrong = await instance.api.post('/auth/login', { email: user.email, password: 'not the password' });
      const unknown = await instance.api.post('/auth/login', { email: uniqueEmail('nobody'), password: PASSWORD });
      expectError(wrong, 401, 'UNAUTHORIZED');
      expectError(unknown, 401, 'UNAUTHORIZED');
      expect(wrong.body.error.message).toBe(unknown.body.error.message);
      expect(wrong.body.data).toBeUndefined();
    });

    /** Statuses of `passwords` tried in turn at `email` from one fresh client address. */
    async function attempts(email: string, passwords: string[], from = clientAddress()): Promise<ApiResponse[]> {
      const answers: ApiResponse[] = [];
      for (const password of passwords) answers.push(await loginFrom(instance.url, from, { email, password }));
      return answers;
    }
    const wrong = (n: number) => Array.from({ length: n }, (_, i) => `wrong password ${i}`);

    it('after 5 failed sign-ins an account is refused with 429 and Retry-After, even with the right password, and a known and an unknown address are throttled alike', async () => {
      const user = await signup();
      const known = await attempts(user.email, [...wrong(5), PASSWORD]);
      const unknown = await attempts(uniqueEmail('nobody'), [...wrong(5), PASSWORD]);
      expect(known.map((r) => r.status)).toEqual([401, 401, 401, 401, 401, 429]);
      expect(unknown.map((r) => r.status)).toEqual(known.map((r) => r.status));
      for (const refused of [known[5]!, unknown[5]!]) {
        expectError(refused, 429, 'RATE_LIMIT_EXCEEDED');
        const wait = Number(refused.headers.get('retry-after'));
        expect(wait).toBeGreaterThanOrEqual(1);
        expect(wait).toBeLessThanOrEqual(60);
        expect(refused.body.error.message).toBe(known[5]!.body.error.message);
      }
      // The throttle is the account's, not the client's: from another address it still holds.
      expectError((await attempts(user.email, [PASSWORD]))[0]!, 429, 'RATE_LIMIT_EXCEEDED');
      // Other accounts are not affected.
      expect((await attempts(uniqueEmail('bystander'), ['a guess']))[0]!.status).toBe(401);
    });

    it("a successful sign-in forgets the account's failed ones", async () => {
      const user = await signup();
      const answers = await attempts(user.email, [...wrong(4), PASSWORD, ...wrong(5)]);
      expect(answers.map((r) => r.status)).toEqual([401, 401, 401, 401, 200, 401, 401, 401, 401, 401]);
    });

    it('one client address gets 30 failed sign-ins a minute, whatever the accounts; its successful ones do not count', async () => {
      const from = clientAddress();
      // An office behind one address signing in at nine.
      const colleagues = await Promise.all(Array.from({ length: 31 }, () => signup()));
      const morning: number[] = [];
      for (const c of colleagues) morning.push((await attempts(c.email, [PASSWORD], from))[0]!.status);
      expect(morning).toEqual(Array(31).fill(200));
      const answers = await Promise.all(Array.from({ length: 30 }, () => attempts(uniqueEmail('stuffed'), ['a guess'], from)));
      expect(answers.map(([r]) => r!.status)).toEqual(Array(30).fill(401));
      const user = await signup();
      expectError((await attempts(user.email, [PASSWORD], from))[0]!, 429, 'RATE_LIMIT_EXCEEDED');
      // The same account from another address is fine.
      expect((await attempts(user.email, [PASSWORD]))[0]!.status).toBe(200);
    });

    it('logout ends that session at once and only that one', async () => {
      const user = await signup();
      const other = (await instance.api.post('/auth/login', { email: user.email, password: PASSWORD })).body.data.token as string;
      const out = await instance.api.post('/auth/logout', undefined, { auth: user.token });
      expect(out.status).toBe(204);
      expect(out.body).toBeUndefined();
      expectError(await instance.api.get('/auth/me', { auth: user.token }), 401, 'UNAUTHORIZED');
      expectError(await instance.api.get('/projects', { auth: user.token }), 401, 'UNAUTHORIZED');
      expect((await instance.api.get('/auth/me', { auth: other })).status).toBe(200);
    });
  });

  describe('projects', () => {
    it('creating a project answers 201 with sk_ and pk_ keys, and the creator is its ADMIN', async () => {
      const user = await verifiedUser(instance);
      const created = await instance.api.post('/projects', { name: 'Acme' }, { auth: user.token });
      expect(created.status).toBe(201);
      expect(created.body.success).toBe(true);
      const project = created.body.data;
      expect(project).toMatchObject({ id: expect.any(String), name: 'Acme', createdAt: expect.any(String) });
      expect(project.secretKey).toMatch(/^sk_[\w-]{20,}$/);
      expect(project.publicKey).toMatch(/^pk_[\w-]{20,}$/);
      expect(new Date(project.createdAt).toISOString()).toBe(project.createdAt);

      const list = await instance.api.get('/projects', { auth: user.token });
      expect(list.status).toBe(200);
      expect(list.body.data).toEqual([expect.objectContaining({ id: project.id, name: 'Acme', role: 'ADMIN' })]);
      // Keys are shown once: never in listings, and their hashes never at all.
      expect(JSON.stringify(list.body)).not.toContain(project.secretKey);
      expect(JSON.stringify(list.body)).not.toContain(project.publicKey);
      expect(JSON.stringify(created.body)).not.toMatch(/hash/i);
      expect(JSON.stringify(list.body)).not.toMatch(/hash|Key"/i);
      const one = await instance.api.get(`/projects/${project.id}`, { auth: user.token });
      expect(one.body.data).toMatchObject({ id: project.id, name: 'Acme', role: 'ADMIN' });
      expect(JSON.stringify(one.body)).not.toMatch(/hash|Key"/i);

      // The secret key works on the project's endpoints.
      expect((await instance.api.get('/contacts', { auth: project.secretKey })).status).toBe(200);
    });

    it('a project name is required', async () => {
      const user = await verifiedUser(instance);
      const res = await instance.api.post('/projects', { name: '   ' }, { auth: user.token });
      expectError(res, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(res)).toEqual(['name']);
      expect((await instance.api.get('/projects', { auth: user.token })).body.data).toEqual([]);
    });

    it('another user can neither see nor touch the project: 404 everywhere', async () => {
      const owner = await newProject(instance, 'Private');
      const stranger = await verifiedUser(instance);
      const as = { auth: stranger.token };

      expect((await instance.api.get('/projects', as)).body.data).toEqual([]);
      expectError(await instance.api.get(`/projects/${owner.projectId}`, as), 404, 'NOT_FOUND');
      expectError(await instance.api.get(`/projects/${owner.projectId}/members`, as), 404, 'NOT_FOUND');
      expectError(await instance.api.patch(`/projects/${owner.projectId}`, { name: 'Mine now' }, as), 404, 'NOT_FOUND');
      expectError(await instance.api.post(`/projects/${owner.projectId}/keys/rotate`, undefined, as), 404, 'NOT_FOUND');
      expectError(
        await instance.api.post(`/projects/${owner.projectId}/members`, { email: stranger.email, role: 'ADMIN' }, as),
        404,
        'NOT_FOUND',
      );

      // Nothing changed: same name, same keys, still no access for the stranger.
      const mine = await instance.api.get(`/projects/${owner.projectId}`, { auth: owner.token });
      expect(mine.body.data).toMatchObject({ name: 'Private', role: 'ADMIN' });
      expect((await owner.api.get('/contacts')).status).toBe(200);
      expectError(await instance.api.get(`/projects/${owner.projectId}`, as), 404, 'NOT_FOUND');
    });

    it('a rotated key stops working at once and the new keys work, on the same data', async () => {
      const owner = await newProject(instance);
      const contact = await owner.api.post('/contacts', { email: 'kept@example.com' });
      expect(contact.status).toBe(201);

      const rotated = await instance.api.post(`/projects/${owner.projectId}/keys/rotate`, undefined, { auth: owner.token });
      expect(rotated.status).toBe(200);
      const { secretKey, publicKey } = rotated.body.data;
      expect(rotated.body.data.id).toBe(owner.projectId);
      expect(secretKey).toMatch(/^sk_/);
      expect(publicKey).toMatch(/^pk_/);
      expect(secretKey).not.toBe(owner.secretKey);
      expect(publicKey).not.toBe(owner.publicKey);
      expect(JSON.stringify(rotated.body)).not.toMatch(/hash/i);

      expectError(await owner.api.get('/contacts'), 401, 'UNAUTHORIZED');
      expectError(await owner.api.post('/v1/track', { email: 'a@example.com', event: 'x' }), 401, 'UNAUTHORIZED');
      expectError(
        await instance.api.post('/v1/track', { email: 'a@example.com', event: 'x' }, { auth: owner.publicKey }),
        401,
        'UNAUTHORIZED',
      );

      const list = await instance.api.get('/contacts', { auth: secretKey });
      expect(list.status).toBe(200);
      expect(list.body.data.contacts.map((c: { email: string }) => c.email)).toEqual(['kept@example.com']);
      expect((await instance.api.post('/v1/track', { email: 'b@example.com', event: 'x' }, { auth: publicKey })).status).toBe(200);
    });
  });

  describe('members', () => {
    it('an admin adds a MEMBER by email (any case); the member sees the project, an unknown email is a 404', async () => {
      const owner = await newProject(instance, 'Shared');
      const member = await verifiedUser(instance);

      const added = await instance.api.post(
        `/projects/${owner.projectId}/members`,
        { email: member.email.toUpperCase(), role: 'MEMBER' },
        { auth: owner.token },
      );
      expect(added.status).toBe(201);
      expect(added.body.data).toEqual({ userId: member.userId, email: member.email, role: 'MEMBER' });

      const theirs = await instance.api.get('/projects', { auth: member.token });
      expect(theirs.body.data).toEqual([expect.objectContaining({ id: owner.projectId, name: 'Shared', role: 'MEMBER' })]);
      expect((await instance.api.get(`/projects/${owner.projectId}`, { auth: member.token })).body.data.role).toBe('MEMBER');

      const members = await instance.api.get(`/projects/${owner.projectId}/members`, { auth: member.token });
      expect(members.status).toBe(200);
      expect(members.body.data).toEqual(
        expect.arrayContaining([
          { userId: owner.userId, email: owner.email, role: 'ADMIN' },
          { userId: member.userId, email: member.email, role: 'MEMBER' },
        ]),
      );
      expect(members.body.data).toHaveLength(2);

      const unknown = await instance.api.post(
        `/projects/${owner.projectId}/members`,
        { email: uniqueEmail('ghost'), role: 'MEMBER' },
        { auth: owner.token },
      );
      expectError(unknown, 404, 'NOT_FOUND');
      expect((await instance.api.get(`/projects/${owner.projectId}/members`, { auth: owner.token })).body.data).toHaveLength(2);

      const badRole = await instance.api.post(
        `/projects/${owner.projectId}/members`,
        { email: member.email, role: 'OWNER' },
        { auth: owner.token },
      );
      expectError(badRole, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(badRole)).toEqual(['role']);
    });

    it('a MEMBER cannot rotate keys, add members or rename the project (403), and nothing changes', async () => {
      const owner = await newProject(instance, 'Guarded');
      const member = await verifiedUser(instance);
      const outsider = await verifiedUser(instance);
      await instance.api.post(`/projects/${owner.projectId}/members`, { email: member.email, role: 'MEMBER' }, { auth: owner.token });
      const as = { auth: member.token };

      expectError(await instance.api.post(`/projects/${owner.projectId}/keys/rotate`, undefined, as), 403, 'FORBIDDEN');
      expectError(
        await instance.api.post(`/projects/${owner.projectId}/members`, { email: outsider.email, role: 'MEMBER' }, as),
        403,
        'FORBIDDEN',
      );
      expectError(
        await instance.api.post(`/projects/${owner.projectId}/members`, { email: member.email, role: 'ADMIN' }, as),
        403,
        'FORBIDDEN',
      );
      expectError(await instance.api.patch(`/projects/${owner.projectId}`, { name: 'Taken over' }, as), 403, 'FORBIDDEN');

      // The keys still work, nobody was added, the member is still a member, the name is unchanged.
      expect((await owner.api.get('/contacts')).status).toBe(200);
      expect((await instance.api.post('/v1/track', { email: 'p@example.com', event: 'x' }, { auth: owner.publicKey })).status).toBe(200);
      expect((await instance.api.get('/projects', { auth: outsider.token })).body.data).toEqual([]);
      const members = await instance.api.get(`/projects/${owner.projectId}/members`, { auth: owner.token });
      expect(members.body.data.map((m: { email: string; role: string }) => `${m.email}:${m.role}`).sort()).toEqual(
        [`${owner.email}:ADMIN`, `${member.email}:MEMBER`].sort(),
      );
      expect((await instance.api.get(`/projects/${owner.projectId}`, as)).body.data.name).toBe('Guarded');
    });

    it('a member promoted to ADMIN can rotate the keys', async () => {
      const owner = await newProject(instance);
      const second = await verifiedUser(instance);
      const added = await instance.api.post(
        `/projects/${owner.projectId}/members`,
        { email: second.email, role: 'ADMIN' },
        { auth: owner.token },
      );
      expect(added.status).toBe(201);
      const rotated = await instance.api.post(`/projects/${owner.projectId}/keys/rotate`, undefined, { auth: second.token });
      expect(rotated.status).toBe(200);
      expectError(await owner.api.get('/contacts'), 401, 'UNAUTHORIZED');
      expect((await instance.api.get('/contacts', { auth: rotated.body.data.secretKey })).status).toBe(200);
    });

    it('the last admin cannot be demoted, so a project always has someone who can rotate its keys', async () => {
      const owner = await newProject(instance);
      const demoted = await instance.api.post(
        `/projects/${owner.projectId}/members`,
        { email: owner.email, role: 'MEMBER' },
        { auth: owner.token },
      );
      expectError(demoted, 409, 'CONFLICT');
      expect((await instance.api.get(`/projects/${owner.projectId}`, { auth: owner.token })).body.data.role).toBe('ADMIN');

      const second = await verifiedUser(instance);
      await instance.api.post(`/projects/${owner.projectId}/members`, { email: second.email, role: 'ADMIN' }, { auth: owner.token });
      const stepDown = await instance.api.post(
        `/projects/${owner.projectId}/members`,
        { email: owner.email, role: 'MEMBER' },
        { auth: owner.token },
      );
      expect(stepDown.status).toBe(201);
      expect((await instance.api.get(`/projects/${owner.projectId}`, { auth: owner.token })).body.data.role).toBe('MEMBER');
    });
  });

  describe('keys and credentials', () => {
    it('a pk_ key records events on POST /v1/track but is 403 FORBIDDEN on secret-key endpoints', async () => {
      const owner = await newProject(instance);
      const pk = { auth: owner.publicKey };
      const tracked = await instance.api.post('/v1/track', { email: 'browser@example.com', event: 'page-view' }, pk);
      expect(tracked.status).toBe(200);
      expect(tracked.body.data).toMatchObject({ contact: expect.any(String), event: expect.any(String) });

      expectError(await instance.api.get('/contacts', pk), 403, 'FORBIDDEN');
      expectError(await instance.api.post('/contacts', { email: 'sneaky@example.com' }, pk), 403, 'FORBIDDEN');
      expectError(await instance.api.get('/events', pk), 403, 'FORBIDDEN');

      // The tracked event landed in the project; the refused create did not.
      const contacts = await owner.api.get('/contacts');
      expect(contacts.body.data.contacts.map((c: { email: string }) => c.email)).toEqual(['browser@example.com']);
    });

    it('a missing, malformed or unknown Authorization is a 401', async () => {
      const owner = await newProject(instance);
      const attempts: Record<string, string>[] = [
        {},
        { authorization: '' },
        { authorization: 'Bearer' },
        { authorization: owner.secretKey },
        { authorization: `Basic ${Buffer.from(`user:${owner.secretKey}`).toString('base64')}` },
        { authorization: 'Bearer sk_thisKeyWasNeverIssuedToAnyProject' },
        { authorization: 'Bearer garbage' },
        { authorization: `Bearer ${owner.secretKey}x` },
      ];
      for (const headers of attempts) {
        const res = await instance.api.get('/contacts', { headers });
        expectError(res, 401, 'UNAUTHORIZED');
      }
      expectError(
        await instance.api.post('/v1/track', { email: 'a@example.com', event: 'x' }, { headers: { authorization: 'Bearer pk_unknown' } }),
        401,
        'UNAUTHORIZED',
      );
      expectError(await instance.api.get('/projects'), 401, 'UNAUTHORIZED');
      expectError(await instance.api.get('/auth/me', { auth: 'sess_notARealSession' }), 401, 'UNAUTHORIZED');
    });

    it('a session token is not an API key and an API key is not a session (401 both ways)', async () => {
      const owner = await newProject(instance);
      expectError(await instance.api.get('/contacts', { auth: owner.token }), 401, 'UNAUTHORIZED');
      expectError(await instance.api.post('/v1/track', { email: 'a@example.com', event: 'x' }, { auth: owner.token }), 401, 'UNAUTHORIZED');
      expectError(await instance.api.get('/projects', { auth: owner.secretKey }), 401, 'UNAUTHORIZED');
      expectError(await instance.api.get('/auth/me', { auth: owner.publicKey }), 401, 'UNAUTHORIZED');
      expectError(
        await instance.api.post(`/projects/${owner.projectId}/keys/rotate`, undefined, { auth: owner.secretKey }),
        401,
        'UNAUTHORIZED',
      );
      // The key was not rotated by that attempt.
      expect((await owner.api.get('/contacts')).status).toBe(200);
    });

    it("one project's key never reaches another project's data", async () => {
      const a = await newProject(instance);
      const b = await newProject(instance);
      const created = await a.api.post('/contacts', { email: 'only-in-a@example.com' });
      expect(created.status).toBe(201);
      expectError(await b.api.get(`/contacts/${created.body.data.id}`), 404, 'NOT_FOUND');
      expect((await b.api.get('/contacts')).body.data.total).toBe(0);
      expect((await a.api.get(`/contacts/${created.body.data.id}`)).status).toBe(200);
    });
  });
});
