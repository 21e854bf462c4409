import type { Branch } from '../../../../actors/workflow-execution/behaviour.ts';
export { branchesOf } from '../../../../domain/workflows/schema.ts';
import type { StepType } from './types.ts';

/** How each step type is named on screen, and what it does (the palette's descriptions). */
export const STEP_LABELS: Record<StepType, { label: string; does: string }> = {
  TRIGGER: { label: 'Trigger', does: 'Starts an execution when the event is recorded' },
  SEND_EMAIL: { label: 'Send email', does: 'Sends a template to the contact' },
  DELAY: { label: 'Delay', does: 'Waits for a while' },
  WAIT_FOR_EVENT: { label: 'Wait for event', does: 'Waits for an event of the contact, or a timeout' },
  CONDITION: { label: 'Condition', does: 'Takes the yes or no branch' },
  WEBHOOK: { label: 'Webhook', does: 'Calls a URL with the contact and the event' },
  UPDATE_CONTACT: { label: 'Update contact', does: "Changes the contact's data" },
  EXIT: { label: 'Exit', does: 'Ends the execution' },
};

/** The branch names as the API writes them, so the graph, the docs and the API read alike. */
export const BRANCH_LABELS: Record<Branch, string> = { yes: 'yes', no: 'no', event: 'event', timeout: 'timeout' };
