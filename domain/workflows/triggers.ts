// How recorded events drive workflows: every event (tracked or system) published on
// `events.recorded` (domain/events/recorded.ts) first resumes the contact's executions waiting for it, then starts every
// enabled workflow of the project whose `eventName` it is. The events of one contact turn (an
// email's `email.sent` and its outcome) come together and are taken in their order.
import { executionActorClient } from '../../actors/workflow-execution/client.ts';
import { DuplicateKeyError } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import type { EventMessage } from '../events/collection.ts';
import { derivedId } from '../ids.ts';
import { entryId, workflowEntries, workflowExecutions, workflows, workflowSteps, type WorkflowDoc } from './collection.ts';

/**
 * The execution an event starts in a workflow: derived from both ids, so a redelivered event
 * finds the execution it started instead of starting a second one.
 */
export const executionIdFor = (workflowId: string, eventId: string): string => derivedId('execution', workflowId, eventId);

/** The events of one contact turn, in their order. */
export async function onEventsRecorded(p: Platform, recorded: EventMessage[]): Promise<void> {
  if (recorded.length === 0) return;
  // Waiting executions first, one query for the turn (index {contactId, status}): an execution
  // one of these events starts never counts it, or another event of the same turn, as awaited.
  const names = [...new Set(recorded.map((e) => e.name))];
  const waiting = await workflowExecutions(p.store).find(
    { contactId: recorded[0].contactId, status: 'WAITING', waitingFor: names.length === 1 ? names[0] : { $in: names } },
    { projection: { _id: 1, waitingFor: 1 } },
  );
  for (const event of recorded) {
    for (const { _id } of waiting.filter((e) => e.waitingFor === event.name)) {
      await executionActorClient(p, _id).event({ eventId: event.eventId, name: event.name, createdAt: event.createdAt });
    }
    for (const workflow of await workflowsStartedBy(p, event.projectId, event.name)) {
      if (!workflow.deleting) await enter(p, workflow, event);
    }
  }
}

/** The enabled workflows an event of `name` starts (a cached read: workflows change a few times a day). */
const workflowsStartedBy = (p: Platform, projectId: string, name: string) => workflows(p.store).find({ projectId, eventName: name, enabled: true }, { shared: true });

/**
 * Which event names could start or resume an execution in the project: those of its enabled
 * workflows, or every name while the project has any WAIT_FOR_EVENT step, whatever event it names
 * (an execution waits for the name its step had when it got there, and a step's config can change
 * meanwhile). Two cached reads, whatever the number of names asked about.
 */
export async function workflowsWant(p: Platform, projectId: string): Promise<(name: string) => boolean> {
  if ((await workflowSteps(p.store).find({ projectId, type: 'WAIT_FOR_EVENT' }, { projection: { _id: 1 }, limit: 1, shared: true })).length > 0) return () => true;
  const starting = new Set((await workflows(p.store).find({ projectId, enabled: true }, { projection: { eventName: 1 }, shared: true })).map((w) => w.eventName));
  return (name) => starting.has(name);
}

/**
 * Starts the workflow for the event's contact, unless re-entry rules say no. The entry record is
 * the atomic claim: inserted once per (workflow, contact), a second insert is a duplicate key in
 * every store, so of two simultaneous triggers exactly one starts an execution. The record keeps
 * the id of the execution that claimed it, so a redelivery of the winning event still starts it.
 */
async function enter(p: Platform, workflow: WorkflowDoc, event: EventMessage): Promise<void> {
  const executionId = executionIdFor(workflow._id, event.eventId);
  const entries = workflowEntries(p.store);
  const claim = entryId(workflow._id, event.contactId);
  try {
    await entries.insertOne({
      _id: claim,
      projectId: workflow.projectId,
      workflowId: workflow._id,
      contactId: event.contactId,
      executionId,
      createdAt: new Date().toISOString(),
    });
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    if (!workflow.allowReentry) {
      const entry = await entries.findOne({ _id: claim }, { projection: { executionId: 1 } });
      if (entry?.executionId !== executionId) return; // entered before: once is all it gets
    }
  }
  await executionActorClient(p, executionId).start({
    projectId: workflow.projectId,
    workflowId: workflow._id,
    contactId: event.contactId,
    trigger: { eventId: event.eventId, name: event.name, data: event.data },
  });
}

/**
 * At start-up: wakes every execution that is RUNNING (a turn ended before its step reported) or
 * WAITING past its time. Reminders should do that, but a reminder is one record in one runtime
 * (see resumeCampaigns). With `rearm`, executions still waiting get their reminder registered
 * again too (a wake before its time only sets the reminder again); the embedded host keeps its
 * reminders in the same store as the executions, so it does not need that.
 */
export async function resumeExecutions(p: Platform, options: { rearm: boolean }): Promise<number> {
  const now = new Date().toISOString();
  const open = await workflowExecutions(p.store).find({ status: { $in: ['RUNNING', 'WAITING'] } }, { projection: { status: 1, wakeAt: 1 } });
  const due = open.filter((e) => options.rearm || e.status === 'RUNNING' || !e.wakeAt || e.wakeAt <= now);
  let next = 0;
  const worker = async () => {
    while (next < due.length) {
      const { _id } = due[next++];
      for (let attempt = 1; ; attempt++) {
        try {
          await executionActorClient(p, _id).wake();
          break;
        } catch (err) {
          // Right after a restart the runtime may not place actors yet: try again for a while.
          if (attempt >= 30) {
            p.log.error({ executionId: _id, err: (err as Error).message }, 'could not resume a workflow execution');
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, 1_000));
        }
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return due.length;
}
