// The workflow collections. A definition is three kinds of documents, each written by the
// dashboard endpoints only: `workflows`, `workflow_steps`, `workflow_transitions`. Executions are
// written by their WorkflowExecutionActor only (one owner per document).
import type { Branch, ExecutionState, ExecutionStatus, StepType } from '../../actors/workflow-execution/behaviour.ts';
import type { Doc, DocumentStore } from '../../ports/store.ts';

export interface WorkflowDoc extends Doc {
  projectId: string;
  name: string;
  description: string | null;
  eventName: string;
  enabled: boolean;
  allowReentry: boolean;
  triggerType: string;
  triggerConfig: Record<string, unknown> | null;
  /** Set while DELETE cancels the executions: no new one starts. */
  deleting?: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface StepDoc extends Doc {
  projectId: string;
  workflowId: string;
  type: StepType;
  name: string;
  position: { x: number; y: number };
  config: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export interface TransitionDoc extends Doc {
  projectId: string;
  workflowId: string;
  fromStepId: string;
  toStepId: string;
  condition: { branch?: Branch } | null;
  priority: number | null;
  createdAt: string;
}

/** The projection of an execution actor's state, saved by the actor after every change. */
export interface ExecutionDoc extends Doc {
  projectId: string;
  workflowId: string;
  contactId: string;
  status: ExecutionStatus;
  currentStepId: string | null;
  /** WAIT_FOR_EVENT: the awaited event (the resume lookup reads it). */
  waitingFor: string | null;
  /** When the execution's reminder is due (a WAITING one wakes then). */
  wakeAt: string | null;
  /** The steps entered so far, in order (absent in documents saved before it was kept). */
  path?: string[];
  reason: string | null;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
}

/**
 * The re-entry guard: `_id` is `<workflowId>:<contactId>`, inserted (never updated) when a contact
 * first enters a workflow. With `allowReentry: false` the insert is the claim: a duplicate key
 * means the contact has entered already, whoever won the race.
 */
export interface EntryDoc extends Doc {
  projectId: string;
  workflowId: string;
  contactId: string;
  executionId: string;
  createdAt: string;
}

export const workflows = (store: DocumentStore) => store.collection<WorkflowDoc>('workflows');
export const workflowSteps = (store: DocumentStore) => store.collection<StepDoc>('workflow_steps');
export const workflowTransitions = (store: DocumentStore) => store.collection<TransitionDoc>('workflow_transitions');
export const workflowExecutions = (store: DocumentStore) => store.collection<ExecutionDoc>('workflow_executions');
export const workflowEntries = (store: DocumentStore) => store.collection<EntryDoc>('workflow_entries');

export const entryId = (workflowId: string, contactId: string) => `${workflowId}:${contactId}`;

export async function ensureWorkflowIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('workflows', [{ keys: { projectId: 1 } }, { keys: { projectId: 1, eventName: 1 } }]);
  store.cacheReads('workflows'); // every recorded event looks up the workflows it starts
  // A project's WAIT_FOR_EVENT steps: whether its recorded events are published at all (triggers.ts).
  await store.ensureIndexes('workflow_steps', [{ keys: { workflowId: 1 } }, { keys: { projectId: 1, type: 1 } }]);
  await store.ensureIndexes('workflow_transitions', [{ keys: { workflowId: 1 } }]);
  // Every turn of every execution reads its workflow's definition.
  store.cacheReads('workflow_steps');
  store.cacheReads('workflow_transitions');
  await store.ensureIndexes('workflow_executions', [
    { keys: { workflowId: 1, status: 1 } },
    { keys: { contactId: 1, status: 1 } },
  ]);
  await store.ensureIndexes('workflow_entries', [{ keys: { workflowId: 1 } }]);
}

export const executionDoc = (id: string, s: ExecutionState): ExecutionDoc => ({
  _id: id,
  projectId: s.projectId,
  workflowId: s.workflowId,
  contactId: s.contactId,
  status: s.status,
  currentStepId: s.stepId,
  waitingFor: s.status === 'WAITING' ? (s.wait?.eventName ?? null) : null,
  wakeAt: s.wait?.until ?? null,
  path: s.path ?? [],
  reason: s.reason,
  createdAt: s.createdAt,
  updatedAt: s.updatedAt,
  completedAt: s.completedAt,
});

// ---- what the API shows ---------------------------------------------------------------------

export const toWorkflow = (doc: WorkflowDoc) => ({
  id: doc._id,
  name: doc.name,
  description: doc.description,
  eventName: doc.eventName,
  enabled: doc.enabled,
  allowReentry: doc.allowReentry,
  triggerType: doc.triggerType,
  triggerConfig: doc.triggerConfig,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
});
export type Workflow = ReturnType<typeof toWorkflow>;

export const toStep = (doc: StepDoc) => ({
  id: doc._id,
  workflowId: doc.workflowId,
  type: doc.type,
  name: doc.name,
  position: doc.position,
  config: doc.config,
  templateId: doc.type === 'SEND_EMAIL' ? ((doc.config.templateId as string | undefined) ?? null) : null,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
});
export type Step = ReturnType<typeof toStep>;

export const toTransition = (doc: TransitionDoc) => ({
  id: doc._id,
  workflowId: doc.workflowId,
  fromStepId: doc.fromStepId,
  toStepId: doc.toStepId,
  condition: doc.condition,
  priority: doc.priority,
  createdAt: doc.createdAt,
});
export type Transition = ReturnType<typeof toTransition>;

export const toExecution = (doc: ExecutionDoc) => ({
  id: doc._id,
  workflowId: doc.workflowId,
  contactId: doc.contactId,
  status: doc.status,
  currentStepId: doc.currentStepId,
  waitingFor: doc.waitingFor,
  wakeAt: doc.status === 'WAITING' ? doc.wakeAt : null,
  path: doc.path ?? [],
  reason: doc.reason,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
  completedAt: doc.completedAt,
});
export type Execution = ReturnType<typeof toExecution>;
