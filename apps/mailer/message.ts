import { createPrivateKey, type KeyObject } from 'node:crypto';
import type Mail from 'nodemailer/lib/mailer';
import { domainOf, type DkimSigning } from '../../domain/domains/collection.ts';
import type { Attachment, EmailDoc } from '../../domain/mail/outbound.ts';
import { emailIdHeaders } from '../../domain/mail/relays/events.ts';
import type { Composed, Links } from './compose.ts';

export type { DkimSigning };

/**
 * Parsing a PEM costs about as much as signing with it: keep each key parsed (in each render
 * thread), by its PEM, the few most recently used.
 */
const keys = new Map<string, KeyObject>();
const MAX_KEYS = 256;

function dkimKey(pem: string): KeyObject {
  let key = keys.get(pem);
  if (!key) {
    key = createPrivateKey(pem);
    if (keys.size >= MAX_KEYS) keys.delete(keys.keys().next().value!);
  }
  keys.delete(pem); // re-inserted last: the least recently used goes first
  keys.set(pem, key);
  return key;
}

/**
 * The message as handed to SMTP: addresses, the composed content, the caller's headers, the
 * unsubscribe headers of RFC 8058 on marketing mail, a Message-ID on the sender's domain, the
 * attachments, a DKIM signature with the domain's key (`signing`, unless the relay signs), and the email's own envelope sender
 * (`returnPath`, see domain/inbound/return-path.ts) when given, where its bounces come back.
 */
export function buildMessage(
  email: EmailDoc,
  content: Composed,
  signing: DkimSigning | null,
  links: Links | undefined,
  attachments: Attachment[],
  returnPath?: string,
): Mail.Options {
  // Ours last: a caller's header must not name another email to a relay's webhook.
  const headers: Record<string, string> = { ...email.headers, ...emailIdHeaders(email._id) };
  if (email.kind === 'marketing' && links) {
    headers['List-Unsubscribe'] = `<${links.unsubscribeUrl}>`;
    headers['List-Unsubscribe-Post'] = 'List-Unsubscribe=One-Click';
  }
  return {
    from: email.fromName ? { name: email.fromName, address: email.from } : email.from,
    to: email.toName ? { name: email.toName, address: email.to } : email.to,
    ...(email.replyTo ? { replyTo: email.replyTo } : {}),
    subject: content.subject,
    html: content.html,
    text: content.text,
    messageId: `<${email._id}@${domainOf(email.from)}>`,
    ...(returnPath ? { envelope: { from: returnPath, to: email.to } } : {}),
    headers,
    attachments: attachments.map((a) => ({ filename: a.filename, contentType: a.contentType, content: Buffer.from(a.content, 'base64') })),
    ...(signing
      ? // Signed by render.ts (dkim.ts) with the parsed key; nodemailer's own signer also takes a KeyObject.
        { dkim: { domainName: signing.domainName, keySelector: signing.keySelector, privateKey: dkimKey(signing.privateKeyPem) as unknown as string } }
      : {}),
  };
}
