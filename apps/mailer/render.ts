import type { KeyObject } from 'node:crypto';
import nodemailer from 'nodemailer';
import type Mail from 'nodemailer/lib/mailer';
import { returnPath } from '../../domain/inbound/return-path.ts';
import { emailLinks, type LinkKey } from '../../domain/mail/links.ts';
import type { FooterSettings } from '../../domain/mail/footer.ts';
import type { Attachment, EmailContent, EmailDoc } from '../../domain/mail/outbound.ts';
import { compose } from './compose.ts';
import { dkimSign, type DkimOptions } from './dkim.ts';
import { buildMessage, type DkimSigning } from './message.ts';
import { buildMime } from './mime.ts';

/**
 * Everything one email needs to become bytes, read from the store beforehand: plain data (and a
 * KeyObject, which threads can pass), so it renders in a worker thread (send-thread.ts) as well
 * as here.
 */
export interface RenderTask {
  email: EmailDoc;
  content: EmailContent;
  /** For tracked links and the unsubscribe pages; absent for the platform's own mail. */
  links?: { publicUrl: string; key: KeyObject };
  project: FooterSettings | null;
  /** The sending domain's key when the platform signs its mail; null when unsigned or the relay signs. */
  signing: DkimSigning | null;
  attachments: Attachment[];
  /** Where its bounces go: the envelope sender is made here (its MAC too, off the event loop). */
  bounces?: { key: LinkKey; domain: string };
}

/** The message as it goes on the wire (CRLF), and what the dev outbox logs of it. */
export interface Rendered {
  raw: Buffer;
  envelope: { from: string; to: string[] };
  messageId: string;
  subject: string;
  text?: string;
}

/** compose → buildMessage → MIME → DKIM: the CPU of an email, none of its I/O. */
export async function renderEmail(task: RenderTask): Promise<Rendered> {
  const { email } = task;
  const links = task.links && email.contactId ? emailLinks(task.links.publicUrl, task.links.key, email._id, email.contactId) : undefined;
  const envelopeFrom = task.bounces && returnPath(task.bounces.key, email._id, task.bounces.domain);
  const message = buildMessage(email, compose(email, task.content, links, task.project), task.signing, links, task.attachments, envelopeFrom);
  const compiled = await compileMessage(message);
  return { ...compiled, subject: message.subject as string, ...(typeof message.text === 'string' ? { text: message.text } : {}) };
}

/** nodemailer's composer, for what buildMime leaves to it (attachments, non-ASCII addresses, …). */
const composer = nodemailer.createTransport({ streamTransport: true, buffer: true, newline: 'windows' });

/**
 * The message as bytes, as they go on the wire (CRLF): built by buildMime, or by nodemailer's
 * composer for anything else, then DKIM-signed with the domain's key when it has one.
 */
export async function compileMessage(message: Mail.Options): Promise<Omit<Rendered, 'subject' | 'text'>> {
  const { dkim, ...unsigned } = message as Mail.Options & { dkim?: DkimOptions };
  let built = buildMime(unsigned);
  if (!built) {
    const info = await composer.sendMail(unsigned);
    built = { raw: info.message as Buffer, envelope: info.envelope as { from: string; to: string[] }, messageId: info.messageId };
  }
  return dkim ? { ...built, raw: await dkimSign(built.raw, dkim) } : built;
}
