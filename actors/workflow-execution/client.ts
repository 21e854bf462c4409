import type { Execution } from '../../domain/workflows/collection.ts';
import type { Platform } from '../../runtime/platform.ts';
import { WORKFLOW_EXECUTION_ACTOR, type StartInput } from './actor.ts';

/** Typed calls to one WorkflowExecutionActor; every call is one turn of that execution. */
export function executionActorClient(p: Platform, executionId: string) {
  const call = (method: string, input?: unknown) => p.actors.invoke<Execution | null>(WORKFLOW_EXECUTION_ACTOR, executionId, method, input);
  return {
    start: (input: StartInput) => call('start', input),
    wake: () => call('wake'),
    event: (event: { eventId: string; name: string; createdAt: string }) => call('event', event),
    cancel: async (reason?: string) => (await call('cancel', { reason }))!,
  };
}
