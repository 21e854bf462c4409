import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRoutes } from '../../apps/api/app.ts';
import type { RouteSpec } from '../../apps/api/http/route.ts';
import type { Platform } from '../../runtime/platform.ts';
import { newProject, verifiedUser, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, type ApiResponse } from '../harness/client.ts';
import { verifiedDomain } from '../harness/domains.ts';
import { startInstance, type Instance } from '../harness/instance.ts';
import { deliverMail } from '../harness/smtp-client.ts';

/**
 * Who may call what, for every route of the registry: the list comes from `apiRoutes`, so a route
 * added later is in the matrix the moment it is mounted. Each refusal is the error envelope with
 * the right status and code, and shows nothing of the project it protects.
 *
 *   no credential                            → 401 UNAUTHORIZED (every route that takes one)
 *   a public key where a secret key is due   → 403 FORBIDDEN;  a key on a session route → 401
 *   a session token on a key route           → 401 UNAUTHORIZED
 *   another project's secret key on one of
 *   this project's objects, another user on
 *   this user's project                      → 404 NOT_FOUND, and nothing changes
 *   a MEMBER on a route that needs an admin  → 403 FORBIDDEN
 *   an unverified user on a route that needs
 *   a verified email (the domain endpoints)  → 403 EMAIL_VERIFICATION_REQUIRED
 */
const routes = apiRoutes({} as Platform);
const where = (r: RouteSpec) => `${r.method.toUpperCase()} ${r.path}`;

/**
 * Who needs what, written out here rather than read from the routes' own declarations (`needs`):
 * a route that stops declaring a need would otherwise drop out of the check that it refuses.
 */
const ADMIN_ONLY = [
  'PATCH /projects/:id', 'POST /projects/:id/keys/rotate', 'POST /projects/:id/members', 'POST /domains', 'PATCH /domains/:id', 'DELETE /domains/:id',
  'PUT /projects/:id/relays/:provider', 'DELETE /projects/:id/relays/:provider',
];
const VERIFIED_ONLY = ['GET /domains/project/:projectId', 'POST /domains', 'GET /domains/:id/verify', 'PATCH /domains/:id', 'DELETE /domains/:id'];
const listed = (names: string[]) => names.map((name) => routes.find((r) => where(r) === name) ?? expect.fail(`${name} is not a route`));

/** The objects of project A that paths name, created in beforeAll. */
interface Fixtures {
  projectId: string;
  contactId: string;
  importJobId: string;
  bulkJobId: string;
  eventName: string;
  segmentId: string;
  staticSegmentId: string;
  campaignId: string;
  templateId: string;
  domainId: string;
  suppressedEmail: string;
  emailId: string;
  workflowId?: string;
  stepId?: string;
  transitionId?: string;
  webhookId: string;
  deliveryId: string;
  receivedEventId: string;
}

/**
 * The value of each path parameter, by the path up to that parameter. A route whose parameter is
 * not here fails the matrix with a message saying so: add the object it names to the fixtures.
 */
const PARAMS: Record<string, (f: Fixtures) => string | undefined> = {
  '/projects/:id': (f) => f.projectId,
  '/domains/project/:projectId': (f) => f.projectId,
  '/domains/:id': (f) => f.domainId,
  '/contacts/:id': (f) => f.contactId,
  '/contacts/import/:jobId': (f) => f.importJobId,
  '/contacts/bulk/:jobId': (f) => f.bulkJobId,
  '/events/contact/:contactId': (f) => f.contactId,
  '/events/:eventName': (f) => f.eventName,
  '/segments/:id': (f) => f.staticSegmentId,
  '/campaigns/:id': (f) => f.campaignId,
  '/templates/:id': (f) => f.templateId,
  '/workflows/:id': (f) => f.workflowId,
  '/workflows/:id/steps/:stepId': (f) => f.stepId,
  '/workflows/:id/transitions/:transitionId': (f) => f.transitionId,
  // No execution is needed: the workflow in the path is already another project's.
  '/workflows/:id/executions/:executionId': () => 'no-such-execution',
  '/suppressions/:email': (f) => f.suppressedEmail,
  '/emails/:id': (f) => f.emailId,
  '/inbound/:eventId': (f) => f.receivedEventId,
  '/projects/:id/relays/:provider': () => 'postmark',
  // Relay webhooks take no credential (the provider's signature is one): only the path is needed here.
  '/v1/relay-events/:provider': () => 'postmark',
  '/v1/relay-events/:provider/:projectId': (f) => f.projectId,
  '/webhooks/:id': (f) => f.webhookId,
  '/webhooks/:id/deliveries/:deliveryId': (f) => f.deliveryId,
};

/**
 * A body that passes validation, so a call reaches the rule that decides who may act. Routes not
 * listed get `{}`; one that refuses `{}` with a 422 before the ownership check fails the matrix
 * with a message saying to add its body here.
 */
const BODIES: Record<string, (f: Fixtures) => unknown> = {
  'PATCH /projects/:id': () => ({ name: 'Renamed by someone else' }),
  'POST /projects/:id/members': () => ({ email: 'intruder@example.com', role: 'ADMIN' }),
  'POST /domains': (f) => ({ projectId: f.projectId, domain: `intruder-${randomUUID().slice(0, 8)}.example.com` }),
  'PATCH /domains/:id': () => ({ dkimSigning: 'relay' }),
  'PATCH /contacts/:id': () => ({ subscribed: false }),
  'PATCH /segments/:id': () => ({ name: 'Renamed by someone else' }),
  'POST /segments/:id/members': () => ({ emails: ['intruder@example.com'] }),
  'DELETE /segments/:id/members': () => ({ emails: ['intruder@example.com'] }),
  'PUT /campaigns/:id': () => ({ name: 'Renamed by someone else' }),
  'POST /campaigns/:id/test': () => ({ email: 'intruder@example.com' }),
  'POST /templates/:id/test': () => ({ email: 'intruder@example.com' }),
  'PATCH /templates/:id': () => ({ name: 'Renamed by someone else' }),
  'PUT /projects/:id/relays/:provider': () => ({ signingKey: 'intruder-password-0123456789' }),
  'PATCH /workflows/:id': () => ({ name: 'Renamed by someone else' }),
  'POST /workflows/:id/steps': () => ({ type: 'EXIT', name: 'Intruder', position: { x: 0, y: 0 }, config: {} }),
  'PATCH /workflows/:id/steps/:stepId': () => ({ name: 'Renamed by someone else' }),
  'POST /workflows/:id/transitions': (f) => ({ fromStepId: f.stepId, toStepId: f.stepId }),
  'PATCH /webhooks/:id': () => ({ description: 'Renamed by someone else' }),
  'POST /webhooks/:id/replay': () => ({ since: '2020-01-01T00:00:00Z' }),
};

/** The concrete path of a route for project A's objects, or the parameter with no fixture. */
function pathFor(route: RouteSpec, f: Fixtures): { path: string } | { missing: string } {
  let pattern = '';
  let path = '';
  for (const segment of route.path.split('/').slice(1)) {
    pattern += `/${segment}`;
    if (!segment.startsWith(':')) {
      path += `/${segment}`;
      continue;
    }
    const value = PARAMS[pattern]?.(f);
    if (value === undefined) return { missing: pattern };
    path += `/${encodeURIComponent(value)}`;
  }
  return { path };
}

const csvUpload = () => {
  const form = new FormData();
  form.append('file', new Blob(['email\nimported@example.com\n'], { type: 'text/csv' }), 'contacts.csv');
  return form;
};

function expectRefusal(res: ApiResponse, status: number, code: string, what: string): void {
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(status);
  expect(res.body?.success, what).toBe(false);
  expect(res.body.error, what).toMatchObject({ code, statusCode: status, requestId: expect.any(String), message: expect.any(String) });
  expect(res.headers.get('x-request-id'), what).toBe(res.body.error.requestId);
}

describe('the authorization matrix of every route', () => {
  let instance: Instance;
  let a: ProjectAccess;
  let b: ProjectAccess;
  let memberToken: string;
  let unverifiedToken: string;
  let f: Fixtures;
  /** Strings only project A has: none may show in an answer to anyone else. */
  const marker = `matrix-${randomUUID().slice(0, 8)}`;

  const call = (route: RouteSpec, path: string, auth: string | undefined, body?: unknown): Promise<ApiResponse> => {
    if (route.upload) return instance.api.call(route.method.toUpperCase(), path, undefined, { auth, raw: csvUpload() });
    const payload = route.body ? (BODIES[`${route.method.toUpperCase()} ${route.path}`]?.(f) ?? body ?? {}) : undefined;
    return instance.api.call(route.method.toUpperCase(), path, payload, { auth });
  };
  const expectNoLeak = (res: ApiResponse, what: string) => {
    expect(JSON.stringify(res.body ?? ''), `${what} shows project A's data`).not.toContain(marker);
  };
  /** Path of `route` for A's objects; fails the matrix for a parameter nobody gave a value. */
  const concrete = (route: RouteSpec): string => {
    const found = pathFor(route, f);
    if ('missing' in found) throw new Error(`${where(route)}: no fixture for ${found.missing}; add the object it names to PARAMS in this file`);
    return found.path;
  };

  beforeAll(async () => {
    instance = await startInstance();
    [a, b] = await Promise.all([newProject(instance, `${marker} project`), newProject(instance, 'Other project')]);

    const member = await verifiedUser(instance);
    memberToken = member.token;
    const unverifiedEmail = `unverified-${randomUUID().slice(0, 8)}@example.com`;
    const signup = await instance.api.post('/auth/signup', { email: unverifiedEmail, password: 'correct horse battery' });
    expect(signup.status).toBe(201);
    unverifiedToken = signup.body.data.token;
    for (const [email, role] of [[member.email, 'MEMBER'], [unverifiedEmail, 'ADMIN']]) {
      const added = await instance.api.post(`/projects/${a.projectId}/members`, { email, role }, { auth: a.token });
      expect(added.status, JSON.stringify(added.body)).toBe(201);
    }

    const domain = await verifiedDomain(instance, a, `${marker}.example.com`);
    const from = `news@${domain.domain}`;
    const must = async (what: string, res: Promise<ApiResponse>) => {
      const r = await res;
      if (r.status >= 300) throw new Error(`creating ${what} failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.data;
    };
    const contact = await must('a contact', a.api.post('/contacts', { email: `${marker}@example.com`, data: { note: marker } }));
    await must('an event', a.api.post('/v1/track', { email: `${marker}@example.com`, event: `${marker}-signed-up` }));
    const template = await must('a template', a.api.post('/templates', { name: `${marker} template`, subject: marker, body: `<p>${marker}</p>`, from }));
    const segment = await must('a segment', a.api.post('/segments', { name: `${marker} static`, type: 'STATIC' }));
    const campaign = await must('a campaign', a.api.post('/campaigns', { name: `${marker} campaign`, subject: marker, body: `<p>${marker}</p>`, from, audienceType: 'ALL' }));
    const bulk = await must('a bulk job', a.api.post('/contacts/bulk-subscribe', { contactIds: [contact.id] }));
    const imported = await must('an import job', a.api.post('/contacts/import', undefined, { raw: csvUpload() }));
    const suppressed = await must('a suppression', a.api.post('/suppressions', { email: `${marker}-suppressed@example.com` }));
    const mailed = await must('an email', a.api.post('/v1/send', { to: `${marker}-mailed@example.com`, from, subject: marker, body: `<p>${marker}</p>` }));
    // Loopback is refused by the outbound guard here: the test event's delivery fails at once, and is still a delivery.
    const webhook = await must('a webhook', a.api.post('/webhooks', { url: `http://127.0.0.1:9/${marker}`, events: ['*'], description: marker }));
    const delivery = await must('a webhook delivery', a.api.post(`/webhooks/${webhook.id}/test`));
    // Inbound mail, whose raw message is kept.
    const writer = `${marker}-writer@example.com`;
    const inbound = await deliverMail(instance.inboundPort, { from: writer, to: [`support@${domain.domain}`] }, `From: ${writer}\r\nSubject: ${marker}\r\n\r\n${marker}\r\n`);
    if (inbound.accepted.length !== 1) throw new Error(`inbound mail was refused: ${inbound.response}`);
    const received = await eventually(async () => {
      const res = await a.api.get('/events?name=email.received');
      return (res.body.data as { id: string }[] | undefined)?.[0];
    }, 30_000, 'the email.received event');
    f = {
      projectId: a.projectId,
      contactId: contact.id,
      importJobId: imported.jobId,
      bulkJobId: bulk.jobId,
      eventName: `${marker}-signed-up`,
      segmentId: segment.id,
      staticSegmentId: segment.id,
      campaignId: campaign.id,
      templateId: template.id,
      domainId: domain.id,
      suppressedEmail: suppressed.email,
      emailId: mailed.emails[0].email,
      webhookId: webhook.id,
      deliveryId: delivery.id,
      receivedEventId: received.id,
    };
    // Workflows, when the registry has them.
    if (routes.some((r) => r.path === '/workflows' && r.method === 'post')) {
      const workflow = await must('a workflow', a.api.post('/workflows', { name: `${marker} workflow`, eventName: `${marker}-signed-up` }));
      const exit = await must('a step', a.api.post(`/workflows/${workflow.id}/steps`, { type: 'EXIT', name: 'Done', position: { x: 0, y: 100 }, config: {} }));
      const delay = await must('a step', a.api.post(`/workflows/${workflow.id}/steps`, { type: 'DELAY', name: 'Wait', position: { x: 0, y: 50 }, config: { amount: 1, unit: 'days' } }));
      const transition = await must('a transition', a.api.post(`/workflows/${workflow.id}/transitions`, { fromStepId: delay.id, toStepId: exit.id }));
      Object.assign(f, { workflowId: workflow.id, stepId: exit.id, transitionId: transition.id });
    }
  });
  afterAll(() => instance?.dispose());

  it('every route names what it needs, and every path parameter has a fixture here', () => {
    expect(routes.length).toBeGreaterThan(40);
    for (const route of routes) concrete(route);
    for (const route of routes.filter((r) => r.needs)) expect(route.auth, `${where(route)}: needs is for session routes`).toBe('user');
    // A route newly declaring a need is added to the lists above on purpose, not by accident.
    expect(routes.filter((r) => r.needs?.admin).map(where).sort()).toEqual([...ADMIN_ONLY].sort());
    expect(routes.filter((r) => r.needs?.verifiedEmail).map(where).sort()).toEqual([...VERIFIED_ONLY].sort());
  });

  it('without a credential, every route that takes one answers 401 UNAUTHORIZED', async () => {
    for (const route of routes.filter((r) => r.auth !== 'none')) {
      const res = await call(route, concrete(route), undefined);
      expectRefusal(res, 401, 'UNAUTHORIZED', `${where(route)} without a credential`);
      expectNoLeak(res, where(route));
    }
  });

  it('a credential of the wrong kind is refused: a public key on secret routes 403, keys on session routes and sessions on key routes 401', async () => {
    for (const route of routes.filter((r) => r.auth !== 'none')) {
      const path = concrete(route);
      if (route.auth === 'secret') {
        expectRefusal(await call(route, path, a.publicKey), 403, 'FORBIDDEN', `${where(route)} with the public key`);
        expectRefusal(await call(route, path, a.token), 401, 'UNAUTHORIZED', `${where(route)} with a session token`);
      } else if (route.auth === 'key') {
        expectRefusal(await call(route, path, a.token), 401, 'UNAUTHORIZED', `${where(route)} with a session token`);
      } else {
        expectRefusal(await call(route, path, a.secretKey), 401, 'UNAUTHORIZED', `${where(route)} with the secret key`);
        expectRefusal(await call(route, path, a.publicKey), 401, 'UNAUTHORIZED', `${where(route)} with the public key`);
      }
    }
  });

  it("another project's key or another user finds none of this project's objects (404), and changes nothing", async () => {
    const targeted = routes.filter((r) => r.auth !== 'none' && (r.params || r.path === '/domains'));
    expect(targeted.length).toBeGreaterThan(20);
    for (const route of targeted) {
      const path = concrete(route);
      const res = await call(route, path, route.auth === 'user' ? b.token : b.secretKey);
      if (res.status === 422) {
        throw new Error(`${where(route)}: the body was refused before the ownership check; add a valid body to BODIES: ${JSON.stringify(res.body)}`);
      }
      expectRefusal(res, 404, 'NOT_FOUND', `${where(route)} with another project's credential`);
      expectNoLeak(res, where(route));
    }
    // Lists with the other project's key show none of this project's objects.
    for (const route of routes.filter((r) => r.method === 'get' && !r.params && (r.auth === 'secret' || r.auth === 'user'))) {
      const res = await call(route, route.path, route.auth === 'user' ? b.token : b.secretKey);
      expect(res.status, `${where(route)}: ${JSON.stringify(res.body)}`).toBe(200);
      expectNoLeak(res, `${where(route)} as the other project`);
    }
    // Everything of A is still there, as it was.
    const still = async (path: string, auth: string, check: (data: any) => void) => {
      const res = await instance.api.get(path, { auth });
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).toBe(200);
      check(res.body.data);
    };
    await still(`/contacts/${f.contactId}`, a.secretKey, (c) => expect(c).toMatchObject({ subscribed: true, data: { note: marker } }));
    await still(`/templates/${f.templateId}`, a.secretKey, (t) => expect(t.name).toBe(`${marker} template`));
    await still(`/segments/${f.staticSegmentId}`, a.secretKey, (s) => expect(s).toMatchObject({ name: `${marker} static`, memberCount: 0 }));
    await still(`/campaigns/${f.campaignId}`, a.secretKey, (c) => expect(c).toMatchObject({ name: `${marker} campaign`, status: 'DRAFT' }));
    await still(`/projects/${a.projectId}`, a.token, (p) => expect(p.name).toBe(`${marker} project`));
    await still(`/projects/${a.projectId}/members`, a.token, (m) => expect(m.map((x: any) => x.email)).not.toContain('intruder@example.com'));
    await still(`/domains/project/${a.projectId}`, a.token, (d) => expect(d.map((x: any) => x.id)).toEqual([f.domainId]));
    await still('/events', a.secretKey, (e) => expect(e.map((x: any) => x.name)).toContain(f.eventName));
    await still(`/suppressions/${encodeURIComponent(f.suppressedEmail)}`, a.secretKey, (s) => expect(s.reason).toBe('manual'));
    await still(`/webhooks/${f.webhookId}`, a.secretKey, (w) => expect(w).toMatchObject({ description: marker, enabled: true }));
    await still(`/webhooks/${f.webhookId}/deliveries`, a.secretKey, (d) => expect(d.items.filter((x: any) => x.replayOf)).toEqual([]));
    if (f.workflowId) await still(`/workflows/${f.workflowId}`, a.secretKey, (w) => expect(w.name).toBe(`${marker} workflow`));
  });

  it('a MEMBER is refused (403 FORBIDDEN) exactly where the route needs an admin, and nothing changes', async () => {
    for (const route of listed(ADMIN_ONLY)) {
      const res = await call(route, concrete(route), memberToken);
      expectRefusal(res, 403, 'FORBIDDEN', `${where(route)} as a MEMBER`);
      expectNoLeak(res, where(route));
    }
    // Reading needs no admin: the declared needs are the only refusals.
    for (const route of routes.filter((r) => r.auth === 'user' && !ADMIN_ONLY.includes(where(r)) && r.method === 'get')) {
      const res = await call(route, concrete(route), memberToken);
      expect(res.status, `${where(route)} as a MEMBER: ${JSON.stringify(res.body)}`).toBe(200);
    }
    // The keys still work (no rotation), the name and members are as they were.
    expect((await a.api.get('/contacts')).status).toBe(200);
    const project = await instance.api.get(`/projects/${a.projectId}`, { auth: a.token });
    expect(project.body.data.name).toBe(`${marker} project`);
  });

  it('an unverified user is refused (403 EMAIL_VERIFICATION_REQUIRED) exactly where the route needs a verified email', async () => {
    for (const route of listed(VERIFIED_ONLY)) {
      const res = await call(route, concrete(route), unverifiedToken);
      expectRefusal(res, 403, 'EMAIL_VERIFICATION_REQUIRED', `${where(route)} as an unverified user`);
      expectNoLeak(res, where(route));
    }
    for (const route of routes.filter((r) => r.auth === 'user' && !VERIFIED_ONLY.includes(where(r)) && r.method === 'get')) {
      const res = await call(route, concrete(route), unverifiedToken);
      expect(res.status, `${where(route)} as an unverified user: ${JSON.stringify(res.body)}`).toBe(200);
    }
    const domains = await instance.api.get(`/domains/project/${a.projectId}`, { auth: a.token });
    expect(domains.body.data.map((d: { id: string }) => d.id)).toEqual([f.domainId]);
  });
});
