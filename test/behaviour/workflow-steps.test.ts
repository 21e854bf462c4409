// Each step type and each branch, run by real executions: triggered over /v1/track, timed with
// second-scale delays, observed over the API, the SMTP sink and a local webhook receiver.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually } from '../harness/client.ts';
import { verifiedDomain } from '../harness/domains.ts';
import { startInstance, type Instance } from '../harness/instance.ts';
import { buildWorkflow, executionOf, statusIs, track, unique, WAIT_MS } from '../harness/workflows.ts';

interface Hit {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

let instance: Instance;
let project: ProjectAccess;
let domain: string;
let receiver: Server;
let receiverUrl: string;
const hits: Hit[] = [];
/** Status codes the receiver answers a path with, in order; 200 once they run out. */
const script = new Map<string, number[]>();

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const path = req.url ?? '/';
      hits.push({ method: req.method ?? '', path, headers: req.headers, body: raw ? JSON.parse(raw) : undefined });
      const status = script.get(path)?.shift() ?? 200;
      res.writeHead(status, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_ATTEMPTS: '3' } });
  project = await newProject(instance, 'Workflow steps');
  domain = (await verifiedDomain(instance, project)).domain;
});
afterAll(async () => {
  await instance?.dispose();
  await new Promise((resolve) => receiver?.close(resolve));
});

async function template(type: 'TRANSACTIONAL' | 'MARKETING', subject: string) {
  const res = await project.api.post('/templates', { name: subject, subject, body: '<p>Hi {{name ?? there}}, code {{coupon ?? none}}</p>', from: `flows@${domain}`, type });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data.id as string;
}

async function contact(email: string, subscribed: boolean, data: Record<string, unknown> = {}) {
  const res = await project.api.post('/contacts', { email, subscribed, data });
  expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
  return res.body.data.id as string;
}

const dataOf = async (contactId: string) => (await project.api.get(`/contacts/${contactId}`)).body.data.data as Record<string, unknown>;
const email = (tag: string) => `${unique(tag)}@people.example`;

describe('workflow steps', () => {
  it('SEND_EMAIL goes through the send path: trigger data renders, a marketing template skips an unsubscribed contact', async () => {
    const event = unique('ordered');
    const txSubject = unique('receipt');
    const mkSubject = unique('promo');
    const wf = await buildWorkflow(project, {
      eventName: event,
      steps: [
        { name: 'receipt', type: 'SEND_EMAIL', templateId: await template('TRANSACTIONAL', txSubject) },
        { name: 'promo', type: 'SEND_EMAIL', config: { templateId: await template('MARKETING', mkSubject) } },
      ],
    });
    const subscribed = email('sub');
    const unsubscribed = email('unsub');
    const subId = await contact(subscribed, true, { name: 'Ann' });
    const unsubId = await contact(unsubscribed, false);
    await track(project, subscribed, event, { coupon: { value: 'SAVE10', persistent: false } });
    await track(project, unsubscribed, event);
    await executionOf(project, wf.id, subId, statusIs('COMPLETED'));
    await executionOf(project, wf.id, unsubId, statusIs('COMPLETED'));

    const receipt = await instance.smtp.waitFor((m) => m.parsed.subject === txSubject && m.rcptTo.includes(subscribed), WAIT_MS);
    expect(receipt.parsed.html).toContain('Hi Ann, code SAVE10');
    await instance.smtp.waitFor((m) => m.parsed.subject === txSubject && m.rcptTo.includes(unsubscribed), WAIT_MS);
    await instance.smtp.waitFor((m) => m.parsed.subject === mkSubject && m.rcptTo.includes(subscribed), WAIT_MS);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(instance.smtp.messages.filter((m) => m.parsed.subject === mkSubject).flatMap((m) => m.rcptTo)).toEqual([subscribed]);
    expect(instance.smtp.messages.filter((m) => m.parsed.subject === txSubject)).toHaveLength(2);
    expect((await dataOf(subId)).coupon).toBeUndefined(); // non-persistent: never stored
  });

  it('DELAY waits (WAITING with its wake-up time), then UPDATE_CONTACT goes through the contact', async () => {
    const event = unique('joined');
    const wf = await buildWorkflow(project, {
      eventName: event,
      steps: [
        { name: 'pause', type: 'DELAY', config: { amount: 2, unit: 'seconds' } },
        { name: 'tag', type: 'UPDATE_CONTACT', config: { data: { onboarded: true, stage: 'two' } } },
      ],
    });
    const address = email('delay');
    const started = Date.now();
    const { contact: contactId } = await track(project, address, event);
    const waiting = await executionOf(project, wf.id, contactId, statusIs('WAITING'));
    expect(waiting.currentStepId).toBe(wf.steps.pause);
    expect(Date.parse(waiting.wakeAt!)).toBeGreaterThanOrEqual(started + 1_500);
    const done = await executionOf(project, wf.id, contactId, statusIs('COMPLETED'));
    expect(Date.parse(done.completedAt!) - Date.parse(waiting.createdAt)).toBeGreaterThanOrEqual(1_900);
    expect(await dataOf(contactId)).toMatchObject({ onboarded: true, stage: 'two' });
  });

  it('WAIT_FOR_EVENT follows `event` when the event is tracked for the contact, `timeout` otherwise', async () => {
    const event = unique('trial');
    const awaited = unique('paid');
    const wf = await buildWorkflow(project, {
      eventName: event,
      chain: false,
      steps: [
        { name: 'wait', type: 'WAIT_FOR_EVENT', config: { eventName: awaited, timeout: 3 } },
        { name: 'converted', type: 'UPDATE_CONTACT', config: { data: { outcome: 'paid' } } },
        { name: 'lapsed', type: 'UPDATE_CONTACT', config: { data: { outcome: 'lapsed' } } },
      ],
      links: [
        { from: 'wait', to: 'converted', branch: 'event' },
        { from: 'wait', to: 'lapsed', branch: 'timeout' },
      ],
    });
    const payer = email('payer');
    const other = email('other');
    const lapser = email('lapser');
    const { contact: payerId } = await track(project, payer, event);
    const { contact: lapserId } = await track(project, lapser, event);
    const waiting = await executionOf(project, wf.id, payerId, statusIs('WAITING'));
    expect(waiting.waitingFor).toBe(awaited);
    await track(project, other, awaited); // someone else's event resumes nobody
    await track(project, payer, awaited);
    await executionOf(project, wf.id, payerId, statusIs('COMPLETED'));
    expect((await dataOf(payerId)).outcome).toBe('paid');
    await executionOf(project, wf.id, lapserId, statusIs('COMPLETED'));
    expect((await dataOf(lapserId)).outcome).toBe('lapsed');
  });

  it('CONDITION decides on contact data, trigger data and segment membership, and follows yes/no by priority', async () => {
    const members = await project.api.post('/segments', { name: unique('vips'), type: 'STATIC' });
    const vip = email('vip');
    const plain = email('plain');
    await project.api.post(`/segments/${members.body.data.id}/members`, { emails: [vip] });
    const vipId = (await project.api.get(`/contacts?search=${encodeURIComponent(vip)}`)).body.data.contacts[0].id;
    const plainId = await contact(plain, true, { plan: 'pro' });
    await project.api.patch(`/contacts/${vipId}`, { data: { plan: 'free' } });

    const run = async (condition: Record<string, unknown>, data?: Record<string, unknown>) => {
      const event = unique('check');
      const wf = await buildWorkflow(project, {
        eventName: event,
        chain: false,
        allowReentry: true,
        steps: [
          { name: 'check', type: 'CONDITION', config: condition },
          { name: 'yes', type: 'EXIT', config: { reason: 'yes' } },
          { name: 'no', type: 'EXIT', config: { reason: 'no' } },
          { name: 'never', type: 'EXIT', config: { reason: 'never' } },
        ],
        links: [
          // Tried in priority order: the unconditional one last, so it is never reached.
          { from: 'check', to: 'never', priority: 5 },
          { from: 'check', to: 'no', branch: 'no', priority: 2 },
          { from: 'check', to: 'yes', branch: 'yes', priority: 1 },
        ],
      });
      const reasons: Record<string, string | null> = {};
      for (const [name, address, id] of [['vip', vip, vipId], ['plain', plain, plainId]] as const) {
        await track(project, address, event, data);
        reasons[name] = (await executionOf(project, wf.id, id, statusIs('COMPLETED'))).reason;
      }
      return reasons;
    };
    expect(await run({ field: 'segment', operator: 'memberOf', value: members.body.data.id })).toEqual({ vip: 'yes', plain: 'no' });
    expect(await run({ field: 'segment', operator: 'notMemberOf', value: members.body.data.id })).toEqual({ vip: 'no', plain: 'yes' });
    expect(await run({ field: 'data.plan', operator: 'equals', value: 'pro' })).toEqual({ vip: 'no', plain: 'yes' });
    expect(await run({ field: 'trigger.data.amount', operator: 'greaterThan', value: 100 }, { amount: { value: 250, persistent: false } })).toEqual({ vip: 'yes', plain: 'yes' });
  });

  it('transitions out of one step are tried by priority; EXIT completes with its reason and nothing after it runs', async () => {
    const event = unique('prio');
    const wf = await buildWorkflow(project, {
      eventName: event,
      chain: false,
      steps: [
        { name: 'first', type: 'UPDATE_CONTACT', config: { data: { path: 'start' } } },
        { name: 'low', type: 'EXIT', config: { reason: 'took priority 1' } },
        { name: 'high', type: 'EXIT', config: { reason: 'took priority 7' } },
        { name: 'after', type: 'UPDATE_CONTACT', config: { data: { path: 'after exit' } } },
      ],
      links: [
        { from: 'first', to: 'high', priority: 7 },
        { from: 'first', to: 'low', priority: 1 },
        { from: 'low', to: 'after' },
      ],
    });
    const { contact: id } = await track(project, email('prio'), event);
    const done = await executionOf(project, wf.id, id, statusIs('COMPLETED'));
    expect(done.reason).toBe('took priority 1');
    expect(done.currentStepId).toBe(wf.steps.low);
    expect((await dataOf(id)).path).toBe('start');
  });

  it('WEBHOOK sends the payload with the configured method and headers, retries a 5xx, and fails for good on a 4xx', async () => {
    const event = unique('hooked');
    const path = `/${unique('hook')}`;
    script.set(path, [503]);
    const wf = await buildWorkflow(project, {
      eventName: event,
      steps: [{ name: 'hook', type: 'WEBHOOK', config: { url: `${receiverUrl}${path}`, method: 'PUT', headers: { 'X-Secret': 's3cret' } } }],
    });
    const address = email('hook');
    const { contact: id, event: eventId } = await track(project, address, event, { plan: 'gold', promo: { value: 'X1', persistent: false } });
    const done = await executionOf(project, wf.id, id, statusIs('COMPLETED'));
    const got = hits.filter((h) => h.path === path);
    expect(got).toHaveLength(2);
    expect(got[1]).toMatchObject({ method: 'PUT', headers: { 'x-secret': 's3cret', 'content-type': 'application/json' } });
    expect(got[0].headers['x-mailroom-delivery']).toBe(got[1].headers['x-mailroom-delivery']);
    expect(got[1].body).toEqual({
      workflowId: wf.id,
      executionId: done.id,
      contact: { id, email: address, subscribed: true, data: { plan: 'gold' } },
      event: { name: event, data: { plan: 'gold', promo: 'X1' } },
    });
    expect(eventId).toBeTruthy();

    const gone = `/${unique('gone')}`;
    script.set(gone, [404]);
    const broken = `/${unique('broken')}`;
    script.set(broken, [500, 500, 500, 500]);
    const wf2 = await buildWorkflow(project, { eventName: unique('hook404'), steps: [{ name: 'hook', type: 'WEBHOOK', config: { url: `${receiverUrl}${gone}` } }] });
    const wf3 = await buildWorkflow(project, { eventName: unique('hook500'), steps: [{ name: 'hook', type: 'WEBHOOK', config: { url: `${receiverUrl}${broken}` } }] });
    const a = await track(project, email('h404'), (await project.api.get(`/workflows/${wf2.id}`)).body.data.eventName);
    const b = await track(project, email('h500'), (await project.api.get(`/workflows/${wf3.id}`)).body.data.eventName);
    const failed404 = await executionOf(project, wf2.id, a.contact, statusIs('FAILED'));
    expect(failed404.reason).toMatch(/HTTP 404/);
    expect(hits.filter((h) => h.path === gone)).toHaveLength(1);
    const failed500 = await executionOf(project, wf3.id, b.contact, statusIs('FAILED'), WAIT_MS + 10_000);
    expect(failed500.reason).toMatch(/HTTP 500.*after 3 attempts/);
    expect(hits.filter((h) => h.path === broken)).toHaveLength(3);
  }, 60_000);

  it('a step that fails for good marks the execution FAILED with the reason (its template was deleted)', async () => {
    const event = unique('doomed');
    const templateId = await template('TRANSACTIONAL', unique('doomed'));
    const wf = await buildWorkflow(project, {
      eventName: event,
      steps: [
        { name: 'pause', type: 'DELAY', config: { amount: 1, unit: 'seconds' } },
        { name: 'send', type: 'SEND_EMAIL', templateId },
      ],
    });
    expect((await project.api.delete(`/templates/${templateId}`)).status).toBe(204);
    const { contact: id } = await track(project, email('doomed'), event);
    const failed = await executionOf(project, wf.id, id, statusIs('FAILED'));
    expect(failed.currentStepId).toBe(wf.steps.send);
    expect(failed.reason).toMatch(/Template not found/);
  });

  it('system events start workflows too: segment.<slug>.entry', async () => {
    const name = unique('Big Spenders');
    const segment = await project.api.post('/segments', {
      name,
      trackMembership: true,
      condition: { logic: 'AND', groups: [{ filters: [{ field: 'data.spent', operator: 'greaterThan', value: 1000 }] }] },
    });
    expect(segment.status, JSON.stringify(segment.body)).toBe(201);
    const wf = await buildWorkflow(project, {
      eventName: `segment.${segment.body.data.slug}.entry`,
      steps: [{ name: 'tag', type: 'UPDATE_CONTACT', config: { data: { big: true } } }],
    });
    const id = await contact(email('spender'), true, { spent: 10 });
    await project.api.patch(`/contacts/${id}`, { data: { spent: 5000 } });
    await executionOf(project, wf.id, id, statusIs('COMPLETED'));
    await eventually(async () => ((await dataOf(id)).big === true ? true : undefined), WAIT_MS, 'the contact to be tagged');
  });
});
