import type { Definition } from '../../actors/workflow-execution/behaviour.ts';
import type { DocumentStore } from '../../ports/store.ts';
import { workflows, workflowSteps, workflowTransitions } from './collection.ts';

/**
 * The workflow as an execution sees it: read afresh on every turn, so edits apply to running
 * executions from their next step on. null when the workflow is gone or being deleted.
 */
export async function loadDefinition(store: DocumentStore, workflowId: string): Promise<Definition | null> {
  const workflow = await workflows(store).findOne({ _id: workflowId }, { projection: { deleting: 1 } });
  if (!workflow || workflow.deleting) return null;
  const [steps, transitions] = await Promise.all([
    workflowSteps(store).find({ workflowId }, { projection: { type: 1, config: 1 } }),
    workflowTransitions(store).find({ workflowId }, { projection: { fromStepId: 1, toStepId: 1, condition: 1, priority: 1 } }),
  ]);
  return {
    steps: steps.map((s) => ({ id: s._id, type: s.type, config: s.config })),
    transitions: transitions.map((t) => ({ id: t._id, fromStepId: t.fromStepId, toStepId: t.toStepId, condition: t.condition ?? null, priority: t.priority ?? null })),
  };
}
