import type { ParsedMail } from 'mailparser';
import { contactActorClient } from '../../actors/contact/client.ts';
import type { Platform } from '../../runtime/platform.ts';
import { emailSchema, type SimpleValue } from '../contacts/schema.ts';
import { resolveContact } from '../contacts/service.ts';
import { AppError } from '../errors.ts';
import { derivedId } from '../ids.ts';
import { LIMITS } from '../limits.ts';

/** Mail the inbound listener took for a project's mailbox; the api role records it on the contact. */
export const RECEIVED_TOPIC = 'email.received';

export interface ReceivedData {
  from: string;
  to: string;
  subject: string;
  text: string;
  messageId: string | null;
  attachments: { filename: string | null; contentType: string; size: number }[];
}

export interface ReceivedMail {
  projectId: string;
  /** Derived from the message and the mailbox: a sender retrying after a lost reply records it once. */
  eventId: string;
  data: ReceivedData;
}

/** The sender's address (the From header, else the envelope sender), normalised like a contact's, or null. */
export function senderOf(mail: Pick<ParsedMail, 'from'>, envelopeFrom: string | undefined): string | null {
  for (const candidate of [mail.from?.value[0]?.address, envelopeFrom]) {
    const parsed = emailSchema.safeParse(candidate ?? '');
    if (parsed.success) return parsed.data;
  }
  return null;
}

/**
 * What `email.received` records of a message for one mailbox (`to`): one event per address a
 * message reaches, as each mailbox would get its copy. The text is cut to the length of a data
 * string, the attachments to their names, types and sizes (the content is not kept).
 */
export function receivedMail(projectId: string, mail: ParsedMail, from: string, to: string, rawDigest: string): ReceivedMail {
  const limit = LIMITS.data.stringValue;
  return {
    projectId,
    eventId: derivedId('email.received', projectId, mail.messageId ?? rawDigest, to),
    data: {
      from,
      to,
      subject: (mail.subject ?? '').slice(0, LIMITS.subject),
      text: (mail.text ?? '').slice(0, limit),
      messageId: mail.messageId ?? null,
      attachments: mail.attachments.slice(0, LIMITS.inbound.attachmentsListed).map((a) => ({
        filename: a.filename ?? null,
        contentType: a.contentType,
        size: a.size,
      })),
    },
  };
}

/**
 * Records each received mail as `email.received` on the sender's contact in the project (created
 * unsubscribed when unknown: writing to a company is no consent to its marketing), which starts
 * workflows like any event.
 */
export function startReceivedMail(p: Platform): void {
  p.pubsub.subscribe<ReceivedMail>(RECEIVED_TOPIC, async ({ projectId, eventId, data }) => {
    // A contact deleted between lookup and turn is created afresh on the second try.
    for (let tries = 0; ; tries++) {
      const { id } = await resolveContact(p, projectId, data.from, false);
      try {
        // System event data is stored as given; `attachments` is its one list.
        await contactActorClient(p, id).recordSystemEvent(RECEIVED_TOPIC, data as unknown as Record<string, SimpleValue>, eventId);
        return;
      } catch (err) {
        if (!(err instanceof AppError && err.code === 'NOT_FOUND' && tries === 0)) throw err;
      }
    }
  });
}
