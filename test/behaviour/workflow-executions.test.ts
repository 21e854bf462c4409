// Executions as a whole: re-entry, enabling and disabling, cancel one and all, delete, listing,
// the SSRF guard of WEBHOOK steps, and executions waiting across a restart.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { eventually, sleep } from '../harness/client.ts';
import { untilIdle } from '../harness/crash.ts';
import { verifiedDomain } from '../harness/domains.ts';
import { QUIET_MS, byMode, startInstance, type Instance } from '../harness/instance.ts';
import { buildWorkflow, executionOf, executions, statusIs, track, unique, WAIT_MS } from '../harness/workflows.ts';

const email = (tag: string) => `${unique(tag)}@people.example`;
const delayOf = (seconds: number) => ({ name: 'pause', type: 'DELAY', config: { amount: seconds, unit: 'seconds' } });
const tag = (data: Record<string, unknown>) => ({ name: 'tag', type: 'UPDATE_CONTACT', config: { data } });

describe('workflow executions', () => {
  let instance: Instance;
  let project: ProjectAccess;
  beforeAll(async () => {
    // No WEBHOOK_ALLOW_PRIVATE: the SSRF guard is on.
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0' } });
    project = await newProject(instance, 'Workflow executions');
  });
  afterAll(() => instance?.dispose());

  it('without allowReentry a contact runs through once, even when two triggers arrive at the same time', async () => {
    const event = unique('once');
    const wf = await buildWorkflow(project, { eventName: event, steps: [tag({ seen: true })] });
    const address = email('once');
    const [first] = await Promise.all(Array.from({ length: 5 }, () => track(project, address, event)));
    const done = await executionOf(project, wf.id, first.contact, statusIs('COMPLETED'));
    // Its path through the graph (what the dashboard highlights): the steps it entered, in order.
    expect(done.path).toEqual([wf.triggerStepId, wf.steps.tag]);
    await track(project, address, event);
    await sleep(QUIET_MS);
    expect(await executions(project, wf.id)).toHaveLength(1);
  });

  it('with allowReentry a contact enters again, also while an earlier execution is still waiting', async () => {
    const event = unique('again');
    const wf = await buildWorkflow(project, { eventName: event, allowReentry: true, steps: [delayOf(2)] });
    const address = email('again');
    const { contact } = await track(project, address, event);
    await executionOf(project, wf.id, contact, statusIs('WAITING'));
    await track(project, address, event);
    await eventually(async () => ((await executions(project, wf.id)).length === 2 ? true : undefined), WAIT_MS, 'two executions');
    await eventually(async () => ((await executions(project, wf.id, '&status=COMPLETED')).length === 2 ? true : undefined), WAIT_MS, 'both completed');
    await track(project, address, event);
    await eventually(async () => ((await executions(project, wf.id)).length === 3 ? true : undefined), WAIT_MS, 'a third');
  });

  it('a disabled workflow starts nothing; disabling leaves running executions alone', async () => {
    const event = unique('toggle');
    const wf = await buildWorkflow(project, { eventName: event, enabled: false, allowReentry: true, steps: [delayOf(2), tag({ finished: true })] });
    const address = email('toggle');
    const { contact } = await track(project, address, event);
    await sleep(QUIET_MS);
    expect(await executions(project, wf.id)).toHaveLength(0);
    expect((await project.api.patch(`/workflows/${wf.id}`, { enabled: true })).status).toBe(200);
    await track(project, address, event);
    await executionOf(project, wf.id, contact, statusIs('WAITING'));
    expect((await project.api.patch(`/workflows/${wf.id}`, { enabled: false })).status).toBe(200);
    await track(project, address, event);
    await executionOf(project, wf.id, contact, statusIs('COMPLETED'));
    expect(await executions(project, wf.id)).toHaveLength(1);
    expect((await project.api.get(`/contacts/${contact}`)).body.data.data.finished).toBe(true);
  });

  it('cancels one execution, then all; lists by status with paging', async () => {
    const event = unique('cancel');
    const wf = await buildWorkflow(project, { eventName: event, steps: [{ name: 'wait', type: 'WAIT_FOR_EVENT', config: { eventName: 'never', timeout: 600 } }] });
    const contacts: string[] = [];
    for (let i = 0; i < 4; i++) contacts.push((await track(project, email('cancel'), event)).contact);
    for (const c of contacts) await executionOf(project, wf.id, c, statusIs('WAITING'));

    const one = (await executions(project, wf.id)).find((e) => e.contactId === contacts[0])!;
    const cancelled = await project.api.delete(`/workflows/${wf.id}/executions/${one.id}`);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect(cancelled.body.data).toMatchObject({ id: one.id, status: 'CANCELLED' });
    const again = await project.api.delete(`/workflows/${wf.id}/executions/${one.id}`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('INVALID_STATE');
    expect((await project.api.delete(`/workflows/${wf.id}/executions/nope`)).status).toBe(404);

    const page = await project.api.get(`/workflows/${wf.id}/executions?status=WAITING&pageSize=2&page=1`);
    expect(page.body.data).toMatchObject({ page: 1, pageSize: 2, total: 3, totalPages: 2 });
    expect(page.body.data.executions).toHaveLength(2);
    expect((await project.api.get(`/workflows/${wf.id}/executions?status=PENDING`)).body.data.total).toBe(0);
    expect((await project.api.get(`/workflows/${wf.id}/executions?status=DONE`)).status).toBe(422);

    const all = await project.api.post(`/workflows/${wf.id}/executions/cancel-all`);
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body.data).toEqual({ cancelled: 3 });
    const list = await executions(project, wf.id);
    expect(list.map((e) => e.status)).toEqual(['CANCELLED', 'CANCELLED', 'CANCELLED', 'CANCELLED']);
    expect(list.every((e) => e.reason && e.completedAt)).toBe(true);
  });

  it('deleting a workflow cancels every in-progress execution before it answers; its executions stay readable as history', async () => {
    const event = unique('doomed');
    const wf = await buildWorkflow(project, { eventName: event, steps: [delayOf(3), tag({ ranAfterDelete: true })] });
    const contacts: string[] = [];
    for (let i = 0; i < 3; i++) contacts.push((await track(project, email('doomed'), event)).contact);
    for (const c of contacts) await executionOf(project, wf.id, c, statusIs('WAITING'));
    expect((await project.api.delete(`/workflows/${wf.id}`)).status).toBe(204);
    expect((await project.api.get(`/workflows/${wf.id}`)).status).toBe(404);
    const history = await executions(project, wf.id);
    expect(history.map((e) => e.contactId).sort()).toEqual([...contacts].sort());
    for (const e of history) expect(e).toMatchObject({ status: 'CANCELLED', reason: 'The workflow was deleted' });
    expect(await executions(project, wf.id, '&status=CANCELLED')).toHaveLength(3);
    // Nothing is left to cancel, and another project cannot read them.
    expect((await project.api.post(`/workflows/${wf.id}/executions/cancel-all`, {})).status).toBe(404);
    const stranger = await newProject(instance, 'Workflow executions stranger');
    expect((await stranger.api.get(`/workflows/${wf.id}/executions`)).status).toBe(404);
    // Past the delay: no cancelled execution went on to its next step.
    await sleep(4_000);
    for (const c of contacts) expect((await project.api.get(`/contacts/${c}`)).body.data.data.ranAfterDelete).toBeUndefined();
  });

  it('a WEBHOOK to a loopback or private address is refused: FAILED with the reason', async () => {
    const server: Server = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    let hits = 0;
    server.on('request', () => hits++);
    try {
      const port = (server.address() as AddressInfo).port;
      for (const url of [`http://127.0.0.1:${port}/hook`, `http://localhost:${port}/hook`, 'http://10.1.2.3/hook', 'http://169.254.169.254/latest/meta-data', 'http://[::1]:9/x']) {
        const event = unique('ssrf');
        const wf = await buildWorkflow(project, { eventName: event, steps: [{ name: 'hook', type: 'WEBHOOK', config: { url } }] });
        const { contact } = await track(project, email('ssrf'), event);
        const failed = await executionOf(project, wf.id, contact, statusIs('FAILED'));
        expect(failed.reason).toMatch(/Refused to call .*(loopback|private|link-local)/);
      }
      expect(hits).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('workflow executions across a restart', () => {
  let instance: Instance;
  let project: ProjectAccess;
  let domain: string;
  beforeAll(async () => {
    instance = await startInstance({ process: true, env: { EMAIL_RATE_PER_SECOND: '0' } });
    project = await newProject(instance, 'Workflow restart');
    domain = (await verifiedDomain(instance, project)).domain;
  });
  afterAll(() => instance?.dispose());

  it('every waiting execution wakes and completes after the platform is killed and started again, each step run once', async () => {
    const count = byMode({ embedded: 20, distributed: 8 });
    const event = unique('survive');
    const awaited = unique('late-event');
    // A SEND_EMAIL after the wait: a step run twice would show as a second email.
    const subject = unique('after the wait');
    const template = await project.api.post('/templates', { name: subject, subject, body: '<p>Still here</p>', from: `flows@${domain}`, type: 'TRANSACTIONAL' });
    expect(template.status).toBe(201);
    const send = { name: 'send', type: 'SEND_EMAIL', templateId: template.body.data.id };
    const wf = await buildWorkflow(project, { eventName: event, steps: [delayOf(4), send, tag({ survived: true })] });
    const wfEvent = await buildWorkflow(project, {
      eventName: event,
      chain: false,
      steps: [{ name: 'wait', type: 'WAIT_FOR_EVENT', config: { eventName: awaited, timeout: 4 } }, tag({ waited: 'timeout' })],
      links: [{ from: 'wait', to: 'tag', branch: 'timeout' }],
    });
    const contacts: string[] = [];
    const addresses: string[] = [];
    for (let i = 0; i < count; i++) {
      addresses.push(email('survive'));
      contacts.push((await track(project, addresses[i], event)).contact);
    }
    await eventually(async () => ((await executions(project, wf.id, '&status=WAITING')).length === count ? true : undefined), WAIT_MS, 'all waiting');
    await eventually(async () => ((await executions(project, wfEvent.id, '&status=WAITING')).length === count ? true : undefined), WAIT_MS, 'all waiting for the event');
    await instance.stop();
    await sleep(5_000); // every wake-up falls due while the platform is down
    await instance.restart();
    const deadline = byMode({ embedded: 30_000, distributed: 120_000 });
    for (const workflowId of [wf.id, wfEvent.id]) {
      await eventually(
        async () => ((await executions(project, workflowId, '&status=COMPLETED')).length === count ? true : undefined),
        deadline,
        `all ${count} executions of ${workflowId} to complete`,
      ).catch(async (err) => {
        throw new Error(`${(err as Error).message}: ${JSON.stringify((await executions(project, workflowId)).map((e) => e.status))}`);
      });
    }
    for (const c of contacts) expect((await project.api.get(`/contacts/${c}`)).body.data.data).toMatchObject({ survived: true, waited: 'timeout' });
    const received = () => instance.smtp.messages.filter((m) => m.parsed.subject === subject).flatMap((m) => m.rcptTo);
    await untilIdle(instance, () => received().length, QUIET_MS, deadline, `${subject}: nothing more`);
    expect(received().sort()).toEqual([...addresses].sort());
  }, 300_000);
});
