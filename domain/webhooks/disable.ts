// When the platform turns an endpoint off by itself: at once on 410 Gone, and after a delivery
// has been tried for 24 h while nothing reached the endpoint, telling the project's admins.
import type { Platform } from '../../runtime/platform.ts';
import { accounts } from '../accounts/collections.ts';
import { nowIso } from '../ids.ts';
import { enqueueSystemEmail } from '../mail/outbound.ts';
import { escapeHtml } from '../templates/render.ts';
import { webhookDeliveries, webhooks } from './collection.ts';

/** Turns the endpoint off with a reason; returns whether it was on. */
export async function disableWebhook(p: Platform, webhookId: string, reason: string): Promise<boolean> {
  const result = await webhooks(p.store).updateOne({ _id: webhookId, enabled: true }, { $set: { enabled: false, disabledReason: reason, updatedAt: nowIso() } });
  return result.modified > 0;
}

/**
 * A delivery was given up after 24 h. If no delivery reached the endpoint since that one was
 * created, the endpoint has been failing for 24 h: it is disabled and its project's admins get an
 * email. (One that received other events meanwhile is only having trouble with this one.)
 */
export async function disableIfFailingSince(p: Platform, webhookId: string, since: string): Promise<void> {
  const reached = await webhookDeliveries(p.store).findOne({ webhookId, status: 'DELIVERED', updatedAt: { $gte: since } }, { projection: { _id: 1 } });
  if (reached) return;
  const reason = `No delivery reached the endpoint since ${since}: disabled after 24 hours of failures`;
  if (!(await disableWebhook(p, webhookId, reason))) return;
  const webhook = await webhooks(p.store).findOne({ _id: webhookId });
  if (!webhook) return;
  const { memberships, users, projects } = accounts(p.store);
  const [admins, project] = await Promise.all([memberships.find({ projectId: webhook.projectId, role: 'ADMIN' }), projects.findOne({ _id: webhook.projectId })]);
  for (const admin of admins) {
    const user = await users.findOne({ _id: admin.userId });
    if (!user) continue;
    await enqueueSystemEmail(p, {
      to: user.email,
      subject: `A webhook endpoint of ${project?.name ?? 'your project'} was disabled`,
      text: `Every delivery to ${webhook.url} has failed for 24 hours, so it was disabled and gets no more events.\n\nOnce it works again, enable it (PATCH /webhooks/${webhookId} {"enabled": true}) and replay what it missed (POST /webhooks/${webhookId}/replay {"since": "${since}"}).`,
      html: `<p>Every delivery to <code>${escapeHtml(webhook.url)}</code> has failed for 24 hours, so it was disabled and gets no more events.</p><p>Once it works again, enable it and replay what it missed since ${since}.</p>`,
    });
  }
}

