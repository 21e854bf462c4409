// Helpers for the workflow behaviour suites: build a workflow over the API, trigger it, watch
// its executions.
import { expect } from 'vitest';
import type { ProjectAccess } from './accounts.ts';
import { eventually } from './client.ts';
import { byMode } from './instance.ts';

export interface Execution {
  id: string;
  workflowId: string;
  contactId: string;
  status: string;
  currentStepId: string | null;
  waitingFor: string | null;
  wakeAt: string | null;
  /** The steps entered, in order, TRIGGER first. */
  path: string[];
  reason: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

export interface Built {
  id: string;
  triggerStepId: string;
  /** Step ids by the names given. */
  steps: Record<string, string>;
}

export const WAIT_MS = byMode({ embedded: 15_000, distributed: 45_000 });

let seq = 0;
export const unique = (tag: string) => `${tag}-${++seq}-${Date.now().toString(36)}`;

export async function createWorkflow(project: ProjectAccess, body: Record<string, unknown>) {
  const res = await project.api.post('/workflows', body);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as { id: string; enabled: boolean; steps: { id: string; type: string }[]; transitions: unknown[] };
}

export interface StepSpec {
  name: string;
  type: string;
  config?: Record<string, unknown>;
  templateId?: string;
}

/**
 * A workflow on `eventName` whose steps run in the order given (each auto-connected to the one
 * before, the first to the TRIGGER), then `links`: extra transitions by step name.
 */
export async function buildWorkflow(
  project: ProjectAccess,
  options: { eventName: string; steps: StepSpec[]; links?: { from: string; to: string; branch?: string; priority?: number }[]; enabled?: boolean; allowReentry?: boolean; chain?: boolean },
): Promise<Built> {
  const wf = await createWorkflow(project, {
    name: unique('wf'),
    eventName: options.eventName,
    enabled: false,
    allowReentry: options.allowReentry ?? false,
  });
  const triggerStepId = wf.steps.find((s) => s.type === 'TRIGGER')!.id;
  const steps: Record<string, string> = { TRIGGER: triggerStepId };
  for (const [i, spec] of options.steps.entries()) {
    const res = await project.api.post(`/workflows/${wf.id}/steps`, {
      type: spec.type,
      name: spec.name,
      position: { x: 0, y: 100 * (i + 1) },
      ...(spec.config ? { config: spec.config } : {}),
      ...(spec.templateId ? { templateId: spec.templateId } : {}),
      autoConnect: (options.chain ?? true) || i === 0,
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    steps[spec.name] = res.body.data.id;
  }
  for (const link of options.links ?? []) {
    const res = await project.api.post(`/workflows/${wf.id}/transitions`, {
      fromStepId: steps[link.from],
      toStepId: steps[link.to],
      ...(link.branch ? { condition: { branch: link.branch } } : {}),
      ...(link.priority !== undefined ? { priority: link.priority } : {}),
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
  }
  if (options.enabled ?? true) {
    const res = await project.api.patch(`/workflows/${wf.id}`, { enabled: true });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  return { id: wf.id, triggerStepId, steps };
}

export async function track(project: ProjectAccess, email: string, event: string, data?: Record<string, unknown>) {
  const res = await project.api.post('/v1/track', { email, event, ...(data ? { data } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data as { contact: string; event: string };
}

export async function executions(project: ProjectAccess, workflowId: string, query = ''): Promise<Execution[]> {
  const res = await project.api.get(`/workflows/${workflowId}/executions?pageSize=100${query}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.data.executions;
}

/** The contact's execution of the workflow once `test` holds for it. */
export async function executionOf(
  project: ProjectAccess,
  workflowId: string,
  contactId: string,
  test: (e: Execution) => boolean,
  timeoutMs = WAIT_MS,
  what = 'execution',
): Promise<Execution> {
  let last: Execution[] = [];
  try {
    return await eventually(
      async () => {
        last = (await executions(project, workflowId)).filter((e) => e.contactId === contactId);
        return last.find(test);
      },
      timeoutMs,
      what,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; executions of the contact: ${JSON.stringify(last)}`);
  }
}

export const statusIs = (status: string) => (e: Execution) => e.status === status;
