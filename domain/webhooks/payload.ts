// What a delivery carries (DESIGN.md, "Event webhooks"): the event, its contact as it is when the
// delivery is created, and for email events the email and what sent it.
import type { Platform } from '../../runtime/platform.ts';
import { contacts } from '../contacts/collection.ts';
import { events, type EventMessage } from '../events/collection.ts';
import { emails } from '../mail/outbound.ts';
import type { DeliveryPayload } from './collection.ts';

export async function payloadOf(p: Platform, event: EventMessage): Promise<DeliveryPayload> {
  const [contact, recorded] = await Promise.all([
    contacts(p.store).findOne({ _id: event.contactId }),
    // The recorded event's data: non-persistent values of a tracked event are stored nowhere, a delivery log included.
    event.system ? null : events(p.store).findOne({ _id: event.eventId }, { projection: { data: 1 } }),
  ]);
  const data = event.system ? event.data : (recorded?.data ?? {});
  const payload: DeliveryPayload = {
    type: event.name,
    timestamp: event.createdAt,
    data: {
      eventId: event.eventId,
      contact: contact && contact.projectId === event.projectId ? { id: contact._id, email: contact.email, subscribed: contact.subscribed, data: contact.data } : null,
      event: { name: event.name, data },
    },
  };
  const emailId = event.name.startsWith('email.') && typeof event.data.emailId === 'string' ? event.data.emailId : undefined;
  if (emailId) {
    const email = await emails(p).findOne({ _id: emailId }, { projection: { source: 1, sourceId: 1, projectId: 1 } });
    payload.data.email = {
      id: emailId,
      ...(email?.source === 'campaign' && email.sourceId ? { campaignId: email.sourceId } : {}),
      ...(email?.source === 'workflow' && email.sourceId ? { workflowId: email.sourceId } : {}),
    };
  }
  return payload;
}

/** The payload of `POST /webhooks/:id/test`: a `webhook.test` event of no contact. */
export const testPayload = (eventId: string, at: string): DeliveryPayload => ({
  type: 'webhook.test',
  timestamp: at,
  data: { eventId, contact: null, event: { name: 'webhook.test', data: {} } },
});
