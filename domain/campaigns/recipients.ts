import type { CampaignState } from '../../actors/campaign/behaviour.ts';
import type { Platform } from '../../runtime/platform.ts';
import { derivedId, orderedDerivedId } from '../ids.ts';
import { keepEmailContent, queueEmails, type EmailDoc } from '../mail/outbound.ts';
import type { Recipient } from './audience.ts';

/**
 * The id of the campaign's email to one contact: the same (campaign, contact) always gives the
 * same id, so a batch that runs again after a crash finds its emails instead of adding new ones.
 * UUID-shaped, because Message-IDs (and the complaint parser reading them back) carry email ids.
 * In the contacts' order (the order batches walk them) when the campaign's state says so.
 */
export const recipientEmailId = (campaign: CampaignState, campaignId: string, contactId: string): string =>
  campaign.orderedEmailIds ? orderedDerivedId(contactId, 'campaign', campaignId, contactId) : derivedId('campaign', campaignId, contactId);

/**
 * Writes one marketing email per recipient and hands each to the mailer (`queueEmails`: the
 * delivery gate skips suppressed addresses), once however often the same batch runs: emails that
 * exist are not written again, and what a batch publishes is the emails that are new or still
 * QUEUED (a crash may have come between writing and publishing; the mailer's claim makes a second
 * message for one email a no-op). Nothing here writes to an email once it is published: the
 * mailer owns it from then on.
 */
export async function queueRecipients(p: Platform, campaignId: string, campaign: CampaignState, recipients: Recipient[], at: string): Promise<number> {
  if (recipients.length === 0) return 0;
  // The body is stored once for the campaign; the id names this very content.
  const contentId = derivedId('campaign-content', campaignId, campaign.subject, campaign.body);
  await keepEmailContent(p, contentId, { _id: contentId, projectId: campaign.projectId, subject: campaign.subject, html: campaign.body });
  const docs: EmailDoc[] = recipients.map((r) => ({
    _id: recipientEmailId(campaign, campaignId, r._id),
    projectId: campaign.projectId,
    contactId: r._id,
    kind: 'marketing',
    source: 'campaign',
    sourceId: campaignId,
    to: r.email,
    from: campaign.from,
    ...(campaign.fromName ? { fromName: campaign.fromName } : {}),
    ...(campaign.replyTo ? { replyTo: campaign.replyTo } : {}),
    contentId,
    vars: r.data,
    status: 'QUEUED',
    createdAt: at,
  }));
  await queueEmails(p, docs, [], { resumed: true });
  return recipients.length;
}
