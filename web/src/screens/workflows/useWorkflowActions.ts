import { useMutation, useQueryClient } from '@tanstack/react-query';
import { api } from '../../api/client.ts';
import type { Step, Transition, WorkflowWithSteps } from './types.ts';

/** Every change the editor makes to a workflow, each followed by a fresh read of the graph. */
export function useWorkflowActions(projectId: string, workflowId: string) {
  const queryClient = useQueryClient();
  const base = `/workflows/${encodeURIComponent(workflowId)}`;
  const call = <T>(path: string, method: 'POST' | 'PATCH' | 'DELETE', body?: unknown) => api<T>(`${base}${path}`, { method, body, projectId });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['workflow', projectId, workflowId] });
  const options = { onSettled: refresh };
  return {
    patchWorkflow: useMutation({ mutationFn: (body: unknown) => call<WorkflowWithSteps>('', 'PATCH', body), ...options }),
    addStep: useMutation({ mutationFn: (body: unknown) => call<Step>('/steps', 'POST', body), ...options }),
    saveStep: useMutation({ mutationFn: ({ stepId, body }: { stepId: string; body: unknown }) => call<Step>(`/steps/${encodeURIComponent(stepId)}`, 'PATCH', body), ...options }),
    deleteStep: useMutation({ mutationFn: (stepId: string) => call<void>(`/steps/${encodeURIComponent(stepId)}`, 'DELETE'), ...options }),
    connect: useMutation({
      mutationFn: (body: { fromStepId: string; toStepId: string; condition: { branch: string } | null }) => call<Transition>('/transitions', 'POST', body),
      ...options,
    }),
    disconnect: useMutation({ mutationFn: (transitionId: string) => call<void>(`/transitions/${encodeURIComponent(transitionId)}`, 'DELETE'), ...options }),
  };
}

export type WorkflowActions = ReturnType<typeof useWorkflowActions>;
