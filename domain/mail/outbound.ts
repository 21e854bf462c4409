import type { Doc } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { newId, nowIso } from '../ids.ts';

export const OUTBOUND_TOPIC = 'email.outbound';

export type EmailKind = 'system' | 'transactional' | 'marketing';
export type EmailStatus = 'QUEUED' | 'SENDING' | 'SENT' | 'FAILED';

/** One email to one recipient: the unit the mailer sends exactly once. */
export interface EmailDoc extends Doc {
  projectId: string | null;
  contactId: string | null;
  kind: EmailKind;
  to: string;
  from: string;
  subject: string;
  html: string;
  text?: string;
  status: EmailStatus;
  createdAt: string;
  sentAt?: string;
  error?: string;
}

export interface OutboundMessage {
  emailId: string;
}

export const emails = (p: Platform) => p.store.collection<EmailDoc>('emails');

/** The platform's own mail (account verification): same path as product mail, no project. */
export async function enqueueSystemEmail(
  p: Platform,
  message: { to: string; subject: string; html: string; text?: string },
): Promise<string> {
  const email: EmailDoc = {
    _id: newId(),
    projectId: null,
    contactId: null,
    kind: 'system',
    from: p.config.systemFrom,
    status: 'QUEUED',
    createdAt: nowIso(),
    ...message,
  };
  await emails(p).insertOne(email);
  await p.pubsub.publish<OutboundMessage>(OUTBOUND_TOPIC, { emailId: email._id });
  return email._id;
}
