// The workflow endpoints: definitions (workflow, steps, transitions) and executions.
import { IN_PROGRESS, type StepType } from '../../actors/workflow-execution/behaviour.ts';
import { executionActorClient } from '../../actors/workflow-execution/client.ts';
import type { Filter } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { AppError, invalid, notFound } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { pageOf } from '../paging.ts';
import { getTemplate } from '../templates/service.ts';
import {
  toExecution,
  toStep,
  toTransition,
  toWorkflow,
  workflowEntries,
  workflowExecutions,
  workflows,
  workflowSteps,
  workflowTransitions,
  type StepDoc,
  type TransitionDoc,
  type WorkflowDoc,
} from './collection.ts';
import { checkConditionConfig, type ConditionConfig } from './condition.ts';
import {
  branchesOf,
  parseStepConfig,
  type CreateStepInput,
  type CreateTransitionInput,
  type CreateWorkflowInput,
  type ListExecutionsQuery,
  type ListWorkflowsQuery,
  type PatchStepInput,
  type PatchWorkflowInput,
} from './schema.ts';

/** A workflow of this project (looked up by `_id`, then checked); another project's is not found. */
async function getWorkflowDoc(p: Platform, projectId: string, id: string): Promise<WorkflowDoc> {
  const doc = await workflows(p.store).findOne({ _id: id });
  if (!doc || doc.projectId !== projectId || doc.deleting) throw notFound('Workflow');
  return doc;
}

async function withSteps(p: Platform, doc: WorkflowDoc) {
  const [steps, transitions] = await Promise.all([
    workflowSteps(p.store).find({ workflowId: doc._id }, { sort: { _id: 1 } }),
    workflowTransitions(p.store).find({ workflowId: doc._id }, { sort: { _id: 1 } }),
  ]);
  return { ...toWorkflow(doc), steps: steps.map(toStep), transitions: transitions.map(toTransition) };
}

/** POST /workflows: disabled unless `enabled: true`; the TRIGGER step comes with it. */
export async function createWorkflow(p: Platform, projectId: string, input: CreateWorkflowInput) {
  const at = nowIso();
  const doc: WorkflowDoc = {
    _id: newId(),
    projectId,
    name: input.name,
    description: input.description ?? null,
    eventName: input.eventName,
    enabled: input.enabled,
    allowReentry: input.allowReentry,
    triggerType: input.triggerType ?? 'EVENT',
    triggerConfig: input.triggerConfig ?? null,
    createdAt: at,
    updatedAt: at,
  };
  // The step first: an enabled workflow is never seen without its entry point.
  await workflowSteps(p.store).insertOne({
    _id: newId(),
    projectId,
    workflowId: doc._id,
    type: 'TRIGGER',
    name: 'Trigger',
    position: { x: 0, y: 0 },
    config: {},
    createdAt: at,
    updatedAt: at,
  });
  await workflows(p.store).insertOne(doc);
  return withSteps(p, doc);
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Newest first, page-numbered; `search` is a literal, case-insensitive partial match on the name. */
export async function listWorkflows(p: Platform, projectId: string, query: ListWorkflowsQuery) {
  const filter: Filter = { projectId, deleting: { $ne: true } };
  if (query.search) filter.name = { $regex: escapeRegex(query.search), $options: 'i' };
  const collection = workflows(p.store);
  const [docs, total] = await Promise.all([
    collection.find(filter, { sort: { _id: -1 }, skip: (query.page - 1) * query.pageSize, limit: query.pageSize }),
    collection.countDocuments(filter),
  ]);
  return { workflows: docs.map(toWorkflow), ...pageOf(query, total) };
}

export async function getWorkflow(p: Platform, projectId: string, id: string) {
  return withSteps(p, await getWorkflowDoc(p, projectId, id));
}

/** PATCH /workflows/:id: the given fields change. Disabling stops new executions only. */
export async function patchWorkflow(p: Platform, projectId: string, id: string, input: PatchWorkflowInput) {
  await getWorkflowDoc(p, projectId, id);
  const set: Record<string, unknown> = { updatedAt: nowIso() };
  for (const [key, value] of Object.entries(input)) if (value !== undefined) set[key] = value;
  const updated = await workflows(p.store).findOneAndUpdate({ _id: id }, { $set: set });
  if (!updated) throw notFound('Workflow');
  return withSteps(p, updated);
}

/**
 * DELETE /workflows/:id: no execution starts from the moment it begins (the workflow is marked),
 * every in-progress execution is cancelled before it answers, then the definition goes. The
 * executions' records stay (CANCELLED, or however they ended) for the history.
 */
export async function deleteWorkflow(p: Platform, projectId: string, id: string): Promise<void> {
  // A delete that was interrupted (the workflow stays marked) can be repeated to finish it.
  const doc = await workflows(p.store).findOne({ _id: id });
  if (!doc || doc.projectId !== projectId) throw notFound('Workflow');
  await workflows(p.store).updateOne({ _id: id }, { $set: { deleting: true, enabled: false, updatedAt: nowIso() } });
  await cancelInProgress(p, id, 'The workflow was deleted');
  await workflowSteps(p.store).deleteMany({ workflowId: id });
  await workflowTransitions(p.store).deleteMany({ workflowId: id });
  await workflowEntries(p.store).deleteMany({ workflowId: id });
  await workflows(p.store).deleteOne({ _id: id });
  // An execution that was starting while the first pass ran finds its workflow gone; this sees to it now.
  await cancelInProgress(p, id, 'The workflow was deleted');
}

// ---- steps -------------------------------------------------------------------------------------

/** A config that can run: its shape by type, and what it names exists in the project. */
async function checkStepConfig(p: Platform, projectId: string, type: Exclude<StepType, 'TRIGGER'>, config: Record<string, unknown>) {
  const parsed = parseStepConfig(type, config);
  if (type === 'SEND_EMAIL') {
    try {
      await getTemplate(p, projectId, String(parsed.templateId));
    } catch (err) {
      if (err instanceof AppError && err.code === 'NOT_FOUND') throw invalid('templateId', 'No template with this id in the project', 'not_found');
      throw err;
    }
  }
  if (type === 'CONDITION') await checkConditionConfig(p, projectId, parsed as unknown as ConditionConfig);
  return parsed;
}

/** SEND_EMAIL's `templateId` shorthand is the same as `config.templateId`. */
function configWithTemplate(type: StepType, config: Record<string, unknown> | undefined, templateId: string | undefined) {
  if (templateId === undefined) return config ?? {};
  if (type !== 'SEND_EMAIL') throw invalid('templateId', 'templateId is the shorthand of SEND_EMAIL steps only', 'not_applicable');
  if (config?.templateId !== undefined && config.templateId !== templateId) {
    throw invalid('templateId', 'templateId and config.templateId differ; give one of them', 'conflict');
  }
  return { ...config, templateId };
}

async function getStepDoc(p: Platform, workflowId: string, stepId: string): Promise<StepDoc> {
  const step = await workflowSteps(p.store).findOne({ _id: stepId });
  if (!step || step.workflowId !== workflowId) throw notFound('Step');
  return step;
}

export async function addStep(p: Platform, projectId: string, workflowId: string, input: CreateStepInput) {
  await getWorkflowDoc(p, projectId, workflowId);
  if (input.type === 'TRIGGER') {
    throw invalid('type', 'A workflow has one TRIGGER step, created with it; it is never added', 'trigger_step');
  }
  if (input.type === 'SEND_EMAIL' && input.templateId === undefined && input.config?.templateId === undefined) {
    throw invalid('templateId', 'A SEND_EMAIL step needs a template: templateId or config.templateId', 'required');
  }
  const config = await checkStepConfig(p, projectId, input.type, configWithTemplate(input.type, input.config, input.templateId));
  const last = input.autoConnect ? (await workflowSteps(p.store).find({ workflowId }, { sort: { _id: -1 }, limit: 1 }))[0] : undefined;
  const at = nowIso();
  const step: StepDoc = { _id: newId(), projectId, workflowId, type: input.type, name: input.name, position: input.position, config, createdAt: at, updatedAt: at };
  await workflowSteps(p.store).insertOne(step);
  if (last) {
    await workflowTransitions(p.store).insertOne({
      _id: newId(),
      projectId,
      workflowId,
      fromStepId: last._id,
      toStepId: step._id,
      condition: null,
      priority: null,
      createdAt: at,
    });
  }
  return toStep(step);
}

/** PATCH a step: name, position, config (checked as on create), templateId; the type never changes. */
export async function patchStep(p: Platform, projectId: string, workflowId: string, stepId: string, input: PatchStepInput) {
  await getWorkflowDoc(p, projectId, workflowId);
  const step = await getStepDoc(p, workflowId, stepId);
  const set: Partial<StepDoc> = { updatedAt: nowIso() };
  if (input.name !== undefined) set.name = input.name;
  if (input.position !== undefined) set.position = input.position;
  if (input.config !== undefined || input.templateId !== undefined) {
    if (step.type === 'TRIGGER') throw invalid('config', 'The TRIGGER step has no config: its event is the workflow\'s eventName', 'trigger_step');
    // templateId alone swaps the template of the step's config; with a config, both must agree.
    const config =
      input.config !== undefined
        ? configWithTemplate(step.type, input.config, input.templateId)
        : configWithTemplate(step.type, { ...step.config, templateId: undefined }, input.templateId);
    set.config = await checkStepConfig(p, projectId, step.type, config);
  }
  const updated = await workflowSteps(p.store).findOneAndUpdate({ _id: stepId }, { $set: set });
  if (!updated) throw notFound('Step');
  return toStep(updated);
}

/** DELETE a step and every transition into or out of it. The TRIGGER step stays. */
export async function deleteStep(p: Platform, projectId: string, workflowId: string, stepId: string): Promise<void> {
  await getWorkflowDoc(p, projectId, workflowId);
  const step = await getStepDoc(p, workflowId, stepId);
  if (step.type === 'TRIGGER') throw invalid('stepId', 'The TRIGGER step is the entry point and cannot be deleted', 'trigger_step');
  await workflowTransitions(p.store).deleteMany({ workflowId, $or: [{ fromStepId: stepId }, { toStepId: stepId }] });
  await workflowSteps(p.store).deleteOne({ _id: stepId });
}

// ---- transitions -------------------------------------------------------------------------------

export async function addTransition(p: Platform, projectId: string, workflowId: string, input: CreateTransitionInput) {
  await getWorkflowDoc(p, projectId, workflowId);
  const [from, to] = await Promise.all(
    [input.fromStepId, input.toStepId].map((id) => workflowSteps(p.store).findOne({ _id: id }, { projection: { workflowId: 1, type: 1 } })),
  );
  if (!from || from.workflowId !== workflowId) throw invalid('fromStepId', 'Not a step of this workflow', 'not_found');
  if (!to || to.workflowId !== workflowId) throw invalid('toStepId', 'Not a step of this workflow', 'not_found');
  if (to.type === 'TRIGGER') throw invalid('toStepId', 'Nothing leads into the TRIGGER step: it is the entry point', 'trigger_step');
  if (from._id === to._id) throw invalid('toStepId', 'A step cannot lead to itself', 'self_loop');
  const branch = input.condition?.branch;
  const allowed: readonly string[] = branchesOf(from.type);
  if (branch !== undefined && !allowed.includes(branch)) {
    throw invalid(
      'condition.branch',
      allowed.length ? `Out of a ${from.type} step the branch is ${allowed.join(' or ')}` : `A ${from.type} step has no branches; leave condition out`,
      'invalid_branch',
    );
  }
  const doc: TransitionDoc = {
    _id: newId(),
    projectId,
    workflowId,
    fromStepId: from._id,
    toStepId: to._id,
    condition: branch !== undefined ? { branch } : null,
    priority: input.priority ?? null,
    createdAt: nowIso(),
  };
  await workflowTransitions(p.store).insertOne(doc);
  return toTransition(doc);
}

export async function deleteTransition(p: Platform, projectId: string, workflowId: string, transitionId: string): Promise<void> {
  await getWorkflowDoc(p, projectId, workflowId);
  const transition = await workflowTransitions(p.store).findOne({ _id: transitionId }, { projection: { workflowId: 1 } });
  if (!transition || transition.workflowId !== workflowId) throw notFound('Transition');
  await workflowTransitions(p.store).deleteOne({ _id: transitionId });
}

// ---- executions --------------------------------------------------------------------------------

/** Newest first, page-numbered, optionally by status. */
export async function listExecutions(p: Platform, projectId: string, workflowId: string, query: ListExecutionsQuery) {
  await checkExecutionsReadable(p, projectId, workflowId);
  const filter: Filter = { workflowId, projectId, ...(query.status ? { status: query.status } : {}) };
  const collection = workflowExecutions(p.store);
  const [docs, total] = await Promise.all([
    collection.find(filter, { sort: { createdAt: -1, _id: -1 }, skip: (query.page - 1) * query.pageSize, limit: query.pageSize }),
    collection.countDocuments(filter),
  ]);
  return { executions: docs.map(toExecution), ...pageOf(query, total) };
}

/**
 * Executions are history: they stay readable, as they ended (those in progress CANCELLED), after
 * their workflow is deleted. Only an id that names no workflow of the project and left no
 * execution in it is a 404.
 */
async function checkExecutionsReadable(p: Platform, projectId: string, workflowId: string): Promise<void> {
  const doc = await workflows(p.store).findOne({ _id: workflowId });
  if (doc && doc.projectId === projectId && !doc.deleting) return;
  const left = await workflowExecutions(p.store).findOne({ workflowId, projectId }, { projection: { _id: 1 } });
  if (!left) throw notFound('Workflow');
}

/** Cancels one RUNNING or WAITING execution (409 INVALID_STATE for one that has ended). */
export async function cancelExecution(p: Platform, projectId: string, workflowId: string, executionId: string) {
  await getWorkflowDoc(p, projectId, workflowId);
  const doc = await workflowExecutions(p.store).findOne({ _id: executionId }, { projection: { workflowId: 1 } });
  if (!doc || doc.workflowId !== workflowId) throw notFound('Execution');
  return executionActorClient(p, executionId).cancel();
}

export async function cancelAllExecutions(p: Platform, projectId: string, workflowId: string) {
  await getWorkflowDoc(p, projectId, workflowId);
  return { cancelled: await cancelInProgress(p, workflowId, 'Cancelled') };
}

/**
 * Cancels every RUNNING or WAITING execution of the workflow through its actor (the one writer
 * of its record), a few at a time. One that ended meanwhile is left as it ended.
 */
async function cancelInProgress(p: Platform, workflowId: string, reason: string): Promise<number> {
  const open = await workflowExecutions(p.store).find({ workflowId, status: { $in: IN_PROGRESS } }, { projection: { _id: 1 } });
  let next = 0;
  let cancelled = 0;
  const worker = async () => {
    while (next < open.length) {
      const { _id } = open[next++];
      try {
        await executionActorClient(p, _id).cancel(reason);
        cancelled++;
      } catch (err) {
        if (!(err instanceof AppError && (err.code === 'INVALID_STATE' || err.code === 'NOT_FOUND'))) throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return cancelled;
}
