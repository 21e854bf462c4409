import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually } from '../harness/client.ts';
import { verifiedDomain, type Domain } from '../harness/domains.ts';
import { startInstance, TEST_MODE, type Instance } from '../harness/instance.ts';

type Line = { process: string; entry: Record<string, unknown> };

describe('logs', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: Domain;

  beforeAll(async () => {
    instance = await startInstance({ logs: true, env: { EMAIL_RATE_PER_SECOND: '0' } });
    project = await newProject(instance, 'Logged');
    domain = await verifiedDomain(instance, project);
  });
  afterAll(() => instance.dispose());

  /** The JSON lines of the mailroom apps (not the sidecars or the datastores). */
  const appLines = async (): Promise<Line[]> =>
    (await instance.logs())
      .filter((l) => l.process === 'embedded' || l.process.startsWith('api-') || l.process === 'mailer')
      .flatMap((l) => {
        try {
          return [{ process: l.process, entry: JSON.parse(l.line) as Record<string, unknown> }];
        } catch {
          return []; // e.g. a runtime's own plain-text warning on stderr
        }
      });
  const apiProcess = TEST_MODE === 'distributed' ? 'api-0' : 'embedded';
  const mailerProcess = TEST_MODE === 'distributed' ? 'mailer' : 'embedded';

  it("carries the caller's X-Request-Id from the API's access line to the mailer's lines for that email", async () => {
    const requestId = `test-${randomUUID()}`;
    const to = `logged-${Date.now()}@customer.example`;
    const res = await project.api.post(
      '/v1/send',
      { to, from: `hello@${domain.domain}`, subject: 'Traced', body: '<p>Hello</p>' },
      { headers: { 'X-Request-Id': requestId } },
    );
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(requestId);
    const emailId = res.body.data.emails[0].email as string;
    await instance.smtp.waitForMailTo(to, 20_000);

    const lines = await eventually(
      async () => {
        const all = await appLines();
        const access = all.find((l) => l.entry.msg === 'request' && l.entry.requestId === requestId);
        const mailer = all.find((l) => l.entry.emailId === emailId && l.entry.msg === 'email finished');
        return access && mailer ? { access, mailer, all } : undefined;
      },
      20_000,
      'the access line and the mailer line',
    );
    expect(lines.access.process).toBe(apiProcess);
    expect(lines.access.entry).toMatchObject({ method: 'POST', route: '/v1/send', status: 200, requestId });
    expect(lines.access.entry.durationMs).toEqual(expect.any(Number));
    expect(lines.mailer.process).toBe(mailerProcess);
    expect(lines.mailer.entry).toMatchObject({ requestId, status: 'DELIVERED' });
    // One access line for the request, however much work it caused.
    expect(lines.all.filter((l) => l.entry.msg === 'request' && l.entry.requestId === requestId)).toHaveLength(1);
  });

  it('makes its own request id when the caller sends none or a malformed one', async () => {
    const none = await project.api.get('/contacts');
    expect(none.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    for (const bad of ['has spaces', 'x'.repeat(129), '-leading-dash', 'quote"d']) {
      const res = await project.api.get('/contacts', { headers: { 'X-Request-Id': bad } });
      expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f]{32}$/);
    }
    const failed = await project.api.get('/contacts/nope', { headers: { 'X-Request-Id': 'caller.id:42' } });
    expect(failed.status).toBe(404);
    expect(failed.body.error.requestId).toBe('caller.id:42');
  });

  it('names the route pattern in the access line, not the path with its ids and tokens', async () => {
    const res = await project.api.get('/contacts/some-contact-id', { headers: { 'X-Request-Id': 'route-pattern-check' } });
    expect(res.status).toBe(404);
    const line = await eventually(async () => (await appLines()).find((l) => l.entry.requestId === 'route-pattern-check' && l.entry.msg === 'request'));
    expect(line.entry).toMatchObject({ method: 'GET', route: '/contacts/:id', status: 404 });
    expect(JSON.stringify(line.entry)).not.toContain('some-contact-id');
  });

  it('never writes a key, a password, a session token or an Authorization header to any log', async () => {
    // Calls that carry every credential, including failing ones that log errors.
    await project.api.post('/auth/login', { email: project.email, password: 'correct horse battery' });
    await project.api.post('/auth/login', { email: project.email, password: 'a wrong password' });
    await instance.api.get('/projects', { auth: project.token });
    await instance.api.post('/v1/track', { email: 'pk@customer.example', event: 'seen' }, { auth: project.publicKey });
    await project.api.post('/v1/send', { to: 'x@customer.example', from: `hello@${domain.domain}`, subject: 'x', body: 'x', extra: true });

    const lines = await instance.logs();
    expect(lines.length).toBeGreaterThan(0);
    const secrets = [project.secretKey, project.publicKey, project.token, 'correct horse battery', 'a wrong password'];
    for (const { process, line } of lines) {
      for (const secret of secrets) {
        if (line.includes(secret)) throw new Error(`${process} logged a credential: ${line}`);
      }
      expect(line.toLowerCase()).not.toMatch(/"authorization":"bearer/);
    }
  });

  it('writes every line of the apps as one JSON object', async () => {
    const lines = (await instance.logs()).filter((l) => l.process === 'embedded' || l.process.startsWith('api-') || l.process === 'mailer');
    expect(lines.length).toBeGreaterThan(0);
    for (const { process, line } of lines) {
      let entry: unknown;
      try {
        entry = JSON.parse(line);
      } catch {
        throw new Error(`${process} wrote a line that is not JSON: ${line}`);
      }
      expect(entry).toMatchObject({ level: expect.any(Number), time: expect.any(Number), msg: expect.any(String) });
    }
  });
});
