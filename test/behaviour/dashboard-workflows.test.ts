import type { Browser, Page, Response as PageResponse } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectAccess } from '../harness/accounts.ts';
import { errors, launchBrowser, screenshot } from '../harness/browser.ts';
import { eventually } from '../harness/client.ts';
import { signInThroughForm, startWithProject, stopDashboard } from '../harness/dashboard.ts';
import { byMode, type Instance } from '../harness/instance.ts';

/**
 * The Workflows screen in a real browser: a workflow drawn in the editor (TRIGGER → DELAY →
 * CONDITION → two SEND_EMAIL branches) with the palette, the side panel and a mouse-drawn edge,
 * enabled, run by a tracked event; each contact gets the email of the branch its data takes, and
 * the screen shows an execution's path through the graph. What the editor drew is checked
 * against the API.
 */
/** How long a check of the page or the API may take to come true (a distributed hop is slower). */
const POLL = { timeout: byMode({ embedded: 10_000, distributed: 60_000 }) };
let instance: Instance;
let browser: Browser;
let page: Page;
let project: ProjectAccess;
let workflowId = '';
const templates: Record<'pro' | 'free', string> = { pro: '', free: '' };

interface ApiStep {
  id: string;
  type: string;
  name: string;
  position: { x: number; y: number };
  config: Record<string, unknown>;
}
interface ApiTransition {
  fromStepId: string;
  toStepId: string;
  condition: { branch?: string } | null;
}

const workflow = async () => {
  const res = await project.api.get(`/workflows/${workflowId}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { enabled: boolean; steps: ApiStep[]; transitions: ApiTransition[] };
};
const stepNamed = async (name: string) => (await workflow()).steps.find((s) => s.name === name)!;
const node = (id: string) => page.locator(`.react-flow__node[data-id="${id}"]`);
const panel = () => page.getByRole('complementary');

/**
 * Does `act`, then waits until the page has written (PATCH) to a path `written` picks, read the
 * workflow again after that write, and drawn what it read: what a refetch would change is on screen.
 */
async function writtenThenRead(written: (path: string) => boolean, act: () => Promise<void>): Promise<void> {
  const answers: ('written' | 'read')[] = [];
  const listen = (r: PageResponse) => {
    const path = new URL(r.url()).pathname;
    if (r.request().method() === 'PATCH' && written(path)) answers.push('written');
    if (r.request().method() === 'GET' && path.endsWith(`/workflows/${workflowId}`)) answers.push('read');
  };
  page.on('response', listen);
  try {
    await act();
    await expect.poll(() => answers.includes('written') && answers.lastIndexOf('read') > answers.lastIndexOf('written'), POLL).toBe(true);
    await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))');
  } finally {
    page.off('response', listen);
  }
}

/** Chooses a step type from the palette, fills its panel and adds it (after the step named `after`, on `branch`). */
async function addStep(type: string, name: string, fill: () => Promise<void>, after: string, branch?: string) {
  await page.getByRole('group', { name: 'Add a step' }).getByRole('button', { name: `+ ${type}` }).click();
  await panel().getByLabel('Step name').fill(name);
  await fill();
  await panel().getByLabel('Comes after').selectOption({ label: after });
  if (branch) await panel().getByLabel('Branch').selectOption(branch);
  await panel().getByRole('button', { name: 'Add step' }).click();
  // Once added, the panel edits the new step.
  await panel().getByRole('heading', { name: `${type} step`, exact: true }).waitFor();
  await expect.poll(async () => (await workflow()).steps.some((s) => s.name === name), POLL).toBe(true);
}

/** Drags with the mouse from the bottom handle of one node to the top handle of another. */
async function drawEdge(fromId: string, toId: string) {
  await node(toId).scrollIntoViewIfNeeded();
  const from = (await node(fromId).locator('.react-flow__handle.source').boundingBox())!;
  const to = (await node(toId).locator('.react-flow__handle.target').boundingBox())!;
  await page.mouse.move(from.x + from.width / 2, from.y + from.height / 2);
  await page.mouse.down();
  await page.mouse.move(to.x + to.width / 2, to.y + to.height / 2, { steps: 10 });
  await page.mouse.up();
}

beforeAll(async () => {
  const started = await startWithProject('Workflow shop', { domain: true });
  ({ instance, project } = started);
  const { domain } = started;
  for (const [key, subject] of [['pro', 'Welcome to Pro, {{ firstName }}'], ['free', 'Welcome, {{ firstName }}']] as const) {
    const res = await project.api.post('/templates', { name: `${key} welcome`, subject, body: `<p>${key} plan</p>`, from: `hello@${domain.domain}` });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    templates[key] = res.body.data.id;
  }
});

afterAll(() => stopDashboard(browser, instance));

describe('the Workflows screen', { timeout: byMode({ embedded: 90_000, distributed: 240_000 }) }, () => {
  it('Chromium starts and the user signs in to the Workflows screen', async () => {
    browser = await launchBrowser();
    page = await signInThroughForm(browser, instance, project, `/p/${project.projectId}/workflows`);
    await page.getByRole('heading', { name: 'Workflows', level: 1 }).waitFor();
    await page.getByText('No workflow yet').waitFor();
  });

  it('a new workflow is checked with the API schema, created disabled with its trigger, and opens in the editor', async () => {
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.getByText('Name is required', { exact: true }).waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Onboarding');
    await page.getByLabel('Trigger event').fill('signed-up');
    await page.getByRole('button', { name: 'Create workflow' }).click();
    await page.getByRole('heading', { name: 'Workflow Onboarding' }).waitFor();
    workflowId = new URL(page.url()).pathname.split('/').pop()!;
    const created = await workflow();
    expect(created.enabled).toBe(false);
    expect(created.steps.map((s) => s.type)).toEqual(['TRIGGER']);
    await node(created.steps[0].id).waitFor();
  });

  it('steps are added from the palette with their config checked in the side panel, and connected', async () => {
    await addStep('Delay', 'Wait a moment', async () => {
      // The API's own schema refuses a delay of 0 before anything is sent.
      await panel().getByLabel('Wait for').fill('0');
      await panel().getByRole('button', { name: 'Add step' }).click();
      await panel().getByText('Too small: expected number to be >0').waitFor();
      expect((await workflow()).steps).toHaveLength(1);
      await panel().getByLabel('Wait for').fill('1');
      await panel().getByLabel('Unit').selectOption('seconds');
    }, 'Trigger');
    expect((await stepNamed('Wait a moment')).config).toEqual({ amount: 1, unit: 'seconds' });

    await addStep('Condition', 'Is on Pro?', async () => {
      await panel().getByLabel('Field').fill('data.plan');
      await panel().getByLabel('Operator').fill('equals');
      await panel().getByLabel('Value').fill('pro');
    }, 'Wait a moment');
    await addStep('Send email', 'Pro welcome', async () => {
      await panel().getByLabel('Template').selectOption({ label: 'pro welcome' });
    }, 'Is on Pro?', 'yes');
    // The second branch's step starts unconnected; its edge is drawn with the mouse.
    await addStep('Send email', 'Free welcome', async () => {
      await panel().getByLabel('Template').selectOption({ label: 'free welcome' });
    }, 'Not connected yet');

    const condition = await stepNamed('Is on Pro?');
    const free = await stepNamed('Free welcome');
    await drawEdge(condition.id, free.id);
    await page.getByRole('dialog', { name: 'Which branch of Is on Pro? leads to Free welcome?' }).waitFor();
    await page.getByRole('button', { name: 'On no' }).click();
    await page.locator('.react-flow__edge-text', { hasText: 'no' }).waitFor();

    const drawn = await workflow();
    const name = (id: string) => drawn.steps.find((s) => s.id === id)!.name;
    expect(drawn.transitions.map((t) => [name(t.fromStepId), name(t.toStepId), t.condition?.branch ?? null])).toEqual([
      ['Trigger', 'Wait a moment', null],
      ['Wait a moment', 'Is on Pro?', null],
      ['Is on Pro?', 'Pro welcome', 'yes'],
      ['Is on Pro?', 'Free welcome', 'no'],
    ]);
    expect(drawn.steps.find((s) => s.name === 'Is on Pro?')!.config).toEqual({ field: 'data.plan', operator: 'equals', value: 'pro' });
    expect(drawn.steps.find((s) => s.name === 'Free welcome')!.config).toEqual({ templateId: templates.free });
  });

  it("a step dragged to a new place, or moved with the arrow keys, keeps its position", async () => {
    const free = await stepNamed('Free welcome');
    await node(free.id).scrollIntoViewIfNeeded();
    const box = (await node(free.id).boundingBox())!;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + box.width / 2 + 250, box.y + box.height / 2, { steps: 10 });
    await page.mouse.up();
    await expect.poll(async () => (await stepNamed('Free welcome')).position.x, POLL).toBeGreaterThan(free.position.x + 100);

    // By keyboard: a focused, selected step moves with the arrow keys, and its place is saved too.
    // The focus stays on the step once a move is saved (the side panel is not made again for a
    // new position), so a second burst of presses moves it further.
    const moved = await stepNamed('Free welcome');
    const focused = () => page.evaluate<string>('document.activeElement?.closest(".react-flow__node")?.getAttribute("data-id") ?? ""');
    const arrowsDown = (y: number) =>
      writtenThenRead((path) => path.endsWith(`/steps/${free.id}`), async () => {
        for (let i = 0; i < 4; i++) await page.keyboard.press('ArrowDown');
        await expect.poll(async () => (await stepNamed('Free welcome')).position.y, POLL).toBe(y);
      });
    await node(free.id).focus();
    await arrowsDown(moved.position.y + 20);
    expect(await focused()).toBe(free.id);
    await arrowsDown(moved.position.y + 40);
    expect(await focused()).toBe(free.id);
  });

  it('enabled on screen, the workflow runs for a tracked event: each contact gets the email of its branch', async () => {
    // A switch saves at once and leaves a settings field being edited as it is.
    const name = page.getByLabel('Workflow name');
    const saved = await name.inputValue();
    await name.fill('Onboarding (draft)');
    await writtenThenRead((path) => path.endsWith(`/workflows/${workflowId}`), async () => {
      await page.getByLabel('Enabled: new executions start on the trigger event').check();
      await expect.poll(async () => (await workflow()).enabled, POLL).toBe(true);
    });
    expect(await name.inputValue()).toBe('Onboarding (draft)');
    await name.fill(saved);
    await page.getByLabel('Allow re-entry: a contact may go through it again on every event').check();
    await expect.poll(async () => (await project.api.get(`/workflows/${workflowId}`)).body.data.allowReentry, POLL).toBe(true);

    for (const [email, plan] of [['ann@example.com', 'pro'], ['bob@example.com', 'free']]) {
      const tracked = await project.api.post('/v1/track', { email, event: 'signed-up', data: { plan, firstName: email.slice(0, 3) } });
      expect(tracked.status, JSON.stringify(tracked.body)).toBe(200);
    }
    const ann = await instance.smtp.waitForMailTo('ann@example.com', byMode({ embedded: 20_000, distributed: 90_000 }));
    expect(ann.parsed.subject).toBe('Welcome to Pro, ann');
    const bob = await instance.smtp.waitForMailTo('bob@example.com', byMode({ embedded: 20_000, distributed: 90_000 }));
    expect(bob.parsed.subject).toBe('Welcome, bob');
    const done = await eventually(async () => {
      const res = await project.api.get(`/workflows/${workflowId}/executions?status=COMPLETED`);
      return res.body.data.total === 2 ? res.body.data.executions : undefined;
    }, byMode({ embedded: 20_000, distributed: 90_000 }), 'two COMPLETED executions');
    expect(instance.smtp.messages.filter((m) => m.rcptTo.includes('ann@example.com'))).toHaveLength(1);
    expect(done).toHaveLength(2);
  });

  it("the executions list shows them, filtered by status, and an execution's path is highlighted in the graph", async () => {
    const executions = page.getByRole('region', { name: 'Executions' });
    await page.getByLabel('Status', { exact: true }).selectOption('COMPLETED');
    await expect.poll(() => executions.getByRole('row').count(), POLL).toBe(3);
    const ann = (await project.api.get('/contacts?search=ann@example.com')).body.data.contacts[0];
    const row = executions.getByRole('row').filter({ hasText: ann.id });
    await row.getByRole('button', { name: 'Show path' }).click();
    await executions.getByText('Path of the execution').filter({ hasText: 'Trigger → Wait a moment → Is on Pro? → Pro welcome' }).waitFor();
    const { steps } = await workflow();
    const onPath = async (name: string) => (await node(steps.find((s) => s.name === name)!.id).getAttribute('class'))?.includes('on-path');
    expect(await onPath('Pro welcome')).toBe(true);
    expect(await onPath('Is on Pro?')).toBe(true);
    expect(await onPath('Free welcome')).toBe(false);
    await page.getByRole('heading', { name: 'Workflow Onboarding' }).scrollIntoViewIfNeeded();
    await screenshot(page, 'workflows');

    await page.getByLabel('Status', { exact: true }).selectOption('RUNNING');
    await executions.getByText('No execution with this status.').waitFor();
  });

  it('a waiting execution is cancelled from the list, and cancel-all stops the rest', async () => {
    // A long delay so executions wait: the DELAY step edited in the side panel.
    const delay = await stepNamed('Wait a moment');
    // By keyboard: a focused step opens in the side panel with Enter.
    await node(delay.id).focus();
    await page.keyboard.press('Enter');
    await panel().getByRole('heading', { name: 'Delay step', exact: true }).waitFor();
    // Focus moves into the panel that opened.
    await expect.poll(() => page.evaluate<string>('document.activeElement?.textContent'), POLL).toBe('Delay step');
    await panel().getByLabel('Wait for').fill('2');
    await panel().getByLabel('Unit').selectOption('days');
    await panel().getByRole('button', { name: 'Save step' }).click();
    await expect.poll(async () => (await stepNamed('Wait a moment')).config, POLL).toEqual({ amount: 2, unit: 'days' });

    for (const email of ['cid@example.com', 'dee@example.com']) await project.api.post('/v1/track', { email, event: 'signed-up', data: { plan: 'free' } });
    await expect.poll(async () => (await project.api.get(`/workflows/${workflowId}/executions?status=WAITING`)).body.data.total, POLL).toBe(2);

    const executions = page.getByRole('region', { name: 'Executions' });
    await page.getByLabel('Status', { exact: true }).selectOption('WAITING');
    await expect.poll(() => executions.getByRole('row').count(), POLL).toBe(3);
    await executions.getByRole('row').nth(1).getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(async () => (await project.api.get(`/workflows/${workflowId}/executions?status=CANCELLED`)).body.data.total, POLL).toBe(1);
    await executions.getByRole('button', { name: 'Cancel all executions' }).click();
    await executions.getByRole('button', { name: 'Cancel them all' }).click();
    await expect.poll(async () => (await project.api.get(`/workflows/${workflowId}/executions?status=WAITING`)).body.data.total, POLL).toBe(0);
    await executions.getByText('No execution with this status.').waitFor();
  });

  it('the list shows the workflow as the API has it; no page threw', async () => {
    await page.getByRole('navigation', { name: 'Project screens' }).getByRole('link', { name: 'Workflows' }).click();
    const row = page.getByRole('row').filter({ hasText: 'Onboarding' });
    await row.getByRole('cell', { name: 'Enabled' }).waitFor();
    await row.getByRole('cell', { name: 'signed-up' }).waitFor();
    expect(errors).toEqual([]);
  });
});
