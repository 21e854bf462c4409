// Workflow definitions: the workflow, its steps and transitions over the API, and every refusal
// of something that could not run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, type ProjectAccess } from '../harness/accounts.ts';
import { verifiedDomain } from '../harness/domains.ts';
import { startInstance, type Instance } from '../harness/instance.ts';
import { createWorkflow, unique } from '../harness/workflows.ts';

let instance: Instance;
let project: ProjectAccess;
let templateId: string;

beforeAll(async () => {
  instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0' } });
  project = await newProject(instance, 'Workflow definitions');
  const domain = await verifiedDomain(instance, project);
  const template = await project.api.post('/templates', { name: 'Welcome', subject: 'Hi', body: '<p>Hi</p>', from: `hello@${domain.domain}` });
  expect(template.status).toBe(201);
  templateId = template.body.data.id;
});
afterAll(() => instance?.dispose());

const at = { x: 10, y: 20 };
const expect422 = (res: { status: number; body: any }, field: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(res.body.error.code).toBe('VALIDATION_ERROR');
  expect(res.body.error.errors.map((e: { field: string }) => e.field)).toContain(field);
};

describe('workflow definitions', () => {
  it('a new workflow is disabled, has its TRIGGER step, and reads back with steps and transitions', async () => {
    const created = await createWorkflow(project, { name: 'Onboarding', eventName: 'signed-up', description: 'New users' });
    expect(created).toMatchObject({ name: 'Onboarding', eventName: 'signed-up', enabled: false, allowReentry: false, description: 'New users', triggerType: 'EVENT' });
    expect(created.steps).toEqual([expect.objectContaining({ type: 'TRIGGER', config: {} })]);
    expect(created.transitions).toEqual([]);

    const enabled = await createWorkflow(project, { name: 'Enabled', eventName: 'x', enabled: true, allowReentry: true });
    expect(enabled).toMatchObject({ enabled: true, allowReentry: true });

    const got = await project.api.get(`/workflows/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toMatchObject({ id: created.id, steps: [{ type: 'TRIGGER' }], transitions: [] });
    expect((await project.api.get('/workflows/nope')).status).toBe(404);

    const other = await newProject(instance, 'Other');
    expect((await other.api.get(`/workflows/${created.id}`)).status).toBe(404);
  });

  it('steps of every type, the templateId shorthand, autoConnect, patch and delete (with their transitions)', async () => {
    const wf = await createWorkflow(project, { name: 'Steps', eventName: 'steps' });
    const trigger = wf.steps[0].id;
    const add = async (body: Record<string, unknown>) => {
      const res = await project.api.post(`/workflows/${wf.id}/steps`, { position: at, ...body });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.data;
    };
    const send = await add({ type: 'SEND_EMAIL', name: 'Welcome', templateId, autoConnect: true });
    expect(send).toMatchObject({ type: 'SEND_EMAIL', templateId, config: { templateId }, position: at });
    const delay = await add({ type: 'DELAY', name: 'Wait a day', config: { amount: 1, unit: 'days' }, autoConnect: true });
    const wait = await add({ type: 'WAIT_FOR_EVENT', name: 'Purchase?', config: { eventName: 'purchased', timeout: 3600 }, autoConnect: true });
    const condition = await add({ type: 'CONDITION', name: 'VIP?', config: { field: 'data.plan', operator: 'equals', value: 'vip' } });
    const hook = await add({ type: 'WEBHOOK', name: 'Tell CRM', config: { url: 'https://crm.example/hook', headers: { 'X-Token': 'abc' } } });
    expect(hook.config).toEqual({ url: 'https://crm.example/hook', method: 'POST', headers: { 'X-Token': 'abc' } });
    const update = await add({ type: 'UPDATE_CONTACT', name: 'Tag', config: { data: { onboarded: true } } });
    const exit = await add({ type: 'EXIT', name: 'Done', config: { reason: 'finished' } });
    expect(update.templateId).toBeNull();

    const got = (await project.api.get(`/workflows/${wf.id}`)).body.data;
    expect(got.steps.map((s: { id: string }) => s.id)).toEqual([trigger, send.id, delay.id, wait.id, condition.id, hook.id, update.id, exit.id]);
    expect(got.transitions.map((t: { fromStepId: string; toStepId: string }) => [t.fromStepId, t.toStepId])).toEqual([
      [trigger, send.id],
      [send.id, delay.id],
      [delay.id, wait.id],
    ]);

    const patched = await project.api.patch(`/workflows/${wf.id}/steps/${delay.id}`, { name: 'Wait an hour', config: { amount: 1, unit: 'hours' }, position: { x: 1, y: 2 } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.data).toMatchObject({ name: 'Wait an hour', config: { amount: 1, unit: 'hours' }, position: { x: 1, y: 2 }, type: 'DELAY' });
    expect422(await project.api.patch(`/workflows/${wf.id}/steps/${delay.id}`, { config: { amount: 1, unit: 'fortnights' } }), 'config.unit');
    const other = await project.api.post('/templates', { name: 'Other', subject: 'Yo', body: '<p>Yo</p>', from: (await project.api.get(`/templates/${templateId}`)).body.data.from });
    const retemplated = await project.api.patch(`/workflows/${wf.id}/steps/${send.id}`, { templateId: other.body.data.id });
    expect(retemplated.status, JSON.stringify(retemplated.body)).toBe(200);
    expect(retemplated.body.data).toMatchObject({ templateId: other.body.data.id, config: { templateId: other.body.data.id } });
    expect422(await project.api.patch(`/workflows/${wf.id}/steps/${send.id}`, { templateId: 'gone' }), 'templateId');
    expect422(await project.api.patch(`/workflows/${wf.id}/steps/${send.id}`, { templateId, config: { templateId: other.body.data.id } }), 'templateId');

    expect((await project.api.delete(`/workflows/${wf.id}/steps/${delay.id}`)).status).toBe(204);
    const after = (await project.api.get(`/workflows/${wf.id}`)).body.data;
    expect(after.steps.some((s: { id: string }) => s.id === delay.id)).toBe(false);
    expect(after.transitions.map((t: { fromStepId: string; toStepId: string }) => [t.fromStepId, t.toStepId])).toEqual([[trigger, send.id]]);
    expect((await project.api.delete(`/workflows/${wf.id}/steps/${delay.id}`)).status).toBe(404);
    expect422(await project.api.delete(`/workflows/${wf.id}/steps/${trigger}`), 'stepId');
  });

  it('refuses with 422 what cannot run', async () => {
    const wf = await createWorkflow(project, { name: 'Refusals', eventName: 'refusals' });
    const trigger = wf.steps[0].id;
    const post = (body: Record<string, unknown>) => project.api.post(`/workflows/${wf.id}/steps`, { name: 'S', position: at, ...body });
    expect422(await post({ type: 'TRIGGER', config: {} }), 'type');
    expect422(await post({ type: 'SEND_EMAIL' }), 'templateId');
    expect422(await post({ type: 'SEND_EMAIL', config: {} }), 'templateId');
    expect422(await post({ type: 'SEND_EMAIL', templateId: 'no-such-template' }), 'templateId');
    expect422(await post({ type: 'DELAY', config: { amount: 'soon', unit: 'days' } }), 'config.amount');
    expect422(await post({ type: 'DELAY', config: { amount: 5 } }), 'config.unit');
    expect422(await post({ type: 'DELAY', config: { amount: 5, unit: 'days', extra: 1 } }), 'config.extra');
    expect422(await post({ type: 'WAIT_FOR_EVENT', config: { eventName: 'x' } }), 'config.timeout');
    expect422(await post({ type: 'WAIT_FOR_EVENT', config: { eventName: 'x', timeout: -1 } }), 'config.timeout');
    expect422(await post({ type: 'CONDITION', config: { field: 'data.plan', operator: 'isAwesome', value: 1 } }), 'config');
    expect422(await post({ type: 'CONDITION', config: { field: 'segment', operator: 'memberOf', value: 'no-such-segment' } }), 'config.value');
    expect422(await post({ type: 'CONDITION', config: { field: 'trigger.data.amount', operator: 'within', value: 1 } }), 'config.operator');
    expect422(await post({ type: 'WEBHOOK', config: { url: 'ftp://files.example/x' } }), 'config.url');
    expect422(await post({ type: 'WEBHOOK', config: { url: 'https://x.example', method: 'TELEPORT' } }), 'config.method');
    expect422(await post({ type: 'WEBHOOK', config: { url: 'https://x.example', headers: { Host: 'evil' } } }), 'config.headers.Host');
    expect422(await post({ type: 'UPDATE_CONTACT', config: { data: {} } }), 'config.data');
    expect422(await post({ type: 'UPDATE_CONTACT', config: { data: { email: 'x@y.z' } } }), 'config.data.email');
    expect422(await post({ type: 'EXIT', templateId }), 'templateId');
    expect422(await post({ type: 'BOGUS' }), 'type');

    const other = await createWorkflow(project, { name: 'Other', eventName: 'other' });
    const mine = (await post({ type: 'CONDITION', config: { field: 'email', operator: 'contains', value: 'vip' } })).body.data;
    const waiting = (await post({ type: 'WAIT_FOR_EVENT', config: { eventName: 'paid', timeout: 60 } })).body.data;
    const foreign = (await project.api.post(`/workflows/${other.id}/steps`, { type: 'EXIT', name: 'X', position: at })).body.data;
    const link = (body: Record<string, unknown>) => project.api.post(`/workflows/${wf.id}/transitions`, body);
    expect422(await link({ fromStepId: trigger, toStepId: foreign.id }), 'toStepId');
    expect422(await link({ fromStepId: foreign.id, toStepId: mine.id }), 'fromStepId');
    expect422(await link({ fromStepId: mine.id, toStepId: trigger }), 'toStepId');
    expect422(await link({ fromStepId: mine.id, toStepId: waiting.id, condition: { branch: 'timeout' } }), 'condition.branch');
    expect422(await link({ fromStepId: waiting.id, toStepId: mine.id, condition: { branch: 'yes' } }), 'condition.branch');
    expect422(await link({ fromStepId: trigger, toStepId: mine.id, condition: { branch: 'yes' } }), 'condition.branch');

    const yes = await link({ fromStepId: mine.id, toStepId: waiting.id, condition: { branch: 'yes' }, priority: 2 });
    expect(yes.status, JSON.stringify(yes.body)).toBe(201);
    expect(yes.body.data).toMatchObject({ fromStepId: mine.id, toStepId: waiting.id, condition: { branch: 'yes' }, priority: 2 });
    const plain = await link({ fromStepId: trigger, toStepId: mine.id });
    expect(plain.body.data).toMatchObject({ condition: null, priority: null });
    expect((await project.api.delete(`/workflows/${wf.id}/transitions/${plain.body.data.id}`)).status).toBe(204);
    expect((await project.api.delete(`/workflows/${wf.id}/transitions/${plain.body.data.id}`)).status).toBe(404);
    expect((await project.api.delete(`/workflows/${other.id}/transitions/${yes.body.data.id}`)).status).toBe(404);

    expect422(await project.api.post('/workflows', { name: 'No event' }), 'eventName');
    expect422(await project.api.post('/workflows', { name: 'X', eventName: 'x', triggerType: 'SCHEDULE' }), 'triggerType');
    expect422(await project.api.patch(`/workflows/${wf.id}`, {}), 'body');
  });

  it('patches the workflow, lists with search and paging, and deletes it', async () => {
    const tag = unique('listed');
    const ids: string[] = [];
    for (const name of [`${tag} alpha`, `${tag} beta`, `${tag} Alphabet`]) ids.push((await createWorkflow(project, { name, eventName: 'listed' })).id);
    const patched = await project.api.patch(`/workflows/${ids[0]}`, { description: 'changed', allowReentry: true, triggerConfig: { note: 1 }, enabled: true });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.data).toMatchObject({ description: 'changed', allowReentry: true, triggerConfig: { note: 1 }, enabled: true, name: `${tag} alpha` });

    const page = await project.api.get(`/workflows?search=${encodeURIComponent(`${tag} ALPHA`)}&pageSize=1`);
    expect(page.status).toBe(200);
    expect(page.body.data).toMatchObject({ page: 1, pageSize: 1, total: 2, totalPages: 2 });
    expect(page.body.data.workflows[0].id).toBe(ids[2]); // newest first
    const second = await project.api.get(`/workflows?search=${encodeURIComponent(`${tag} alpha`)}&pageSize=1&page=2`);
    expect(second.body.data.workflows[0].id).toBe(ids[0]);
    expect((await project.api.get('/workflows?pageSize=101')).status).toBe(422);

    expect((await project.api.delete(`/workflows/${ids[1]}`)).status).toBe(204);
    expect((await project.api.get(`/workflows/${ids[1]}`)).status).toBe(404);
    expect((await project.api.delete(`/workflows/${ids[1]}`)).status).toBe(404);
    const all = await project.api.get(`/workflows?search=${encodeURIComponent(tag)}`);
    expect(all.body.data.total).toBe(2);
  });
});
