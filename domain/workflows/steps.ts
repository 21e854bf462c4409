// What the action steps do. Each returns the outcome for the execution's decide function, or
// throws for a failure worth retrying (the store, the runtime): the actor then tries the step
// again shortly. A failure for good (a template or contact gone, a webhook refused) is an outcome.
import type { Branch, ExecutionState, StepDef } from '../../actors/workflow-execution/behaviour.ts';
import { contactActorClient } from '../../actors/contact/client.ts';
import type { Platform } from '../../runtime/platform.ts';
import { contacts } from '../contacts/collection.ts';
import type { ContactData, SimpleValue } from '../contacts/schema.ts';
import { requireVerifiedSender } from '../domains/sender.ts';
import { AppError } from '../errors.ts';
import { derivedId, nowIso } from '../ids.ts';
import { queueEmails, type EmailDoc } from '../mail/outbound.ts';
import { getTemplate } from '../templates/service.ts';
import { ConditionError, evaluateCondition, type ConditionConfig } from './condition.ts';
import { callWebhook } from './webhook.ts';

export type StepOutcome = { ok: true; branch?: Branch } | { ok: false; reason: string; retryable: boolean };

/**
 * UUID-shaped and the same for one visit of one step of one execution, so a step run again after
 * a crash finds its email instead of sending another (Message-IDs carry email ids).
 */
export const workflowEmailId = (executionId: string, visit: number): string => derivedId('workflow', executionId, String(visit));

export async function performStep(p: Platform, executionId: string, state: ExecutionState, step: StepDef, visit: number): Promise<StepOutcome> {
  try {
    switch (step.type) {
      case 'SEND_EMAIL':
        await sendEmail(p, executionId, state, String(step.config.templateId), visit);
        return { ok: true };
      case 'UPDATE_CONTACT':
        await contactActorClient(p, state.contactId).patch({ data: step.config.data as ContactData });
        return { ok: true };
      case 'CONDITION':
        return { ok: true, branch: (await evaluateCondition(p, state, step.config as unknown as ConditionConfig, new Date())) ? 'yes' : 'no' };
      case 'WEBHOOK':
        return await webhook(p, executionId, state, step, visit);
      default:
        return { ok: false, reason: `Step ${step.id} (${step.type}) is not an action`, retryable: false };
    }
  } catch (err) {
    // A rule of the product said no: the step cannot succeed by trying again.
    if (err instanceof AppError || err instanceof ConditionError) return { ok: false, reason: `${step.type} step ${step.id}: ${err.message}`, retryable: false };
    throw err;
  }
}

/** The same send path as /v1/send: verified sender, then `queueEmails` (the delivery gate, the record, the outbound topic). */
async function sendEmail(p: Platform, executionId: string, state: ExecutionState, templateId: string, visit: number): Promise<void> {
  const template = await getTemplate(p, state.projectId, templateId);
  await requireVerifiedSender(p, state.projectId, template.from);
  const contact = await contacts(p.store).findOne({ _id: state.contactId });
  if (!contact || contact.projectId !== state.projectId) throw new AppError('NOT_FOUND', 'The contact no longer exists');
  const kind = template.type === 'MARKETING' ? 'marketing' : 'transactional';
  const doc: EmailDoc = {
    _id: workflowEmailId(executionId, visit),
    projectId: state.projectId,
    contactId: state.contactId,
    kind,
    source: 'workflow',
    sourceId: state.workflowId,
    templateId: template.id,
    to: contact.email,
    from: template.from,
    ...(template.fromName ? { fromName: template.fromName } : {}),
    ...(template.replyTo ? { replyTo: template.replyTo } : {}),
    subject: template.subject,
    html: template.body,
    // The trigger's data (non-persistent values included) renders in the email, over the contact's.
    vars: { ...contact.data, ...(simpleOnly(state.trigger.data)) },
    status: 'QUEUED',
    createdAt: nowIso(),
  };
  // The same id on every run of this visit: a run after a crash finds the email instead of sending another.
  await queueEmails(p, [doc], [], { resumed: true });
}

async function webhook(p: Platform, executionId: string, state: ExecutionState, step: StepDef, visit: number): Promise<StepOutcome> {
  const contact = await contacts(p.store).findOne({ _id: state.contactId });
  if (!contact || contact.projectId !== state.projectId) return { ok: false, reason: `WEBHOOK step ${step.id}: the contact no longer exists`, retryable: false };
  const outcome = await callWebhook(
    {
      url: String(step.config.url),
      method: String(step.config.method ?? 'POST'),
      headers: (step.config.headers as Record<string, string> | undefined) ?? {},
      deliveryId: `${executionId}:${visit}`,
      body: {
        workflowId: state.workflowId,
        executionId,
        contact: { id: contact._id, email: contact.email, subscribed: contact.subscribed, data: contact.data },
        event: { name: state.trigger.name, data: state.trigger.data },
      },
    },
    { allowPrivate: p.config.webhookAllowPrivate, timeoutMs: p.config.webhookTimeoutMs },
  );
  if (outcome.ok) return { ok: true };
  return { ok: false, reason: `WEBHOOK step ${step.id}: ${outcome.reason}`, retryable: outcome.retryable };
}

function simpleOnly(data: Record<string, unknown>): Record<string, SimpleValue> {
  return Object.fromEntries(Object.entries(data).filter((e): e is [string, SimpleValue] => ['string', 'number', 'boolean'].includes(typeof e[1])));
}
