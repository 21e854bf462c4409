import { createVerify } from 'node:crypto';
import { invalid } from '../../errors.ts';
import { badSignature, field, type RelayRequest } from './request.ts';

/**
 * Amazon SNS message signatures: RSA over the message's canonical string (its fields in a fixed
 * order, each as `Name\nvalue\n`), SHA1 for SignatureVersion 1 and SHA256 for 2, with the
 * certificate at `SigningCertURL`. Only certificates and subscription links on SNS's own hosts
 * are trusted: a message naming any other host is refused before anything is fetched.
 */
export interface SnsMessage {
  Type: string;
  MessageId: string;
  TopicArn: string;
  Message: string;
  Timestamp: string;
  SignatureVersion: string;
  Signature: string;
  SigningCertURL: string;
  Subject?: string;
  SubscribeURL?: string;
  Token?: string;
}

const FIELDS: Record<string, (keyof SnsMessage)[]> = {
  Notification: ['Message', 'MessageId', 'Subject', 'Timestamp', 'TopicArn', 'Type'],
  SubscriptionConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
  UnsubscribeConfirmation: ['Message', 'MessageId', 'SubscribeURL', 'Timestamp', 'Token', 'TopicArn', 'Type'],
};

/** The string SNS signs; an absent optional field (a Notification's Subject) is left out. */
export function canonicalString(m: SnsMessage): string {
  return (FIELDS[m.Type] ?? [])
    .filter((name) => typeof m[name] === 'string')
    .map((name) => `${name}\n${m[name]}\n`)
    .join('');
}

/** An `https` URL on `sns.<region>.amazonaws.com` (or `.amazonaws.com.cn`): the only hosts SNS uses. */
export function isSnsUrl(url: unknown, pathEnd = ''): url is string {
  if (typeof url !== 'string') return false;
  try {
    const u = new URL(url);
    return u.protocol === 'https:' && !u.username && !u.password && !u.port && /^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$/.test(u.hostname) && u.pathname.endsWith(pathEnd);
  } catch {
    return false;
  }
}

/** The SNS message in a body, its shape checked; the signature is checked by `verifySns`. */
export function snsMessageOf(req: RelayRequest): SnsMessage {
  let m: unknown;
  try {
    m = JSON.parse(req.body.toString('utf8'));
  } catch {
    throw invalid('body', 'The body is not an SNS message (JSON)', 'invalid_json');
  }
  for (const name of ['Type', 'MessageId', 'TopicArn', 'Message', 'Timestamp', 'SignatureVersion', 'Signature', 'SigningCertURL']) {
    if (typeof field(m, name) !== 'string') throw invalid(name, `An SNS message has a string ${name}`, 'required');
  }
  return m as SnsMessage;
}

/** Checks the signature with the certificate (PEM) from `SigningCertURL`. */
export function verifySns(m: SnsMessage, certificatePem: string): void {
  const algorithm = m.SignatureVersion === '1' ? 'RSA-SHA1' : m.SignatureVersion === '2' ? 'RSA-SHA256' : undefined;
  if (!algorithm || !FIELDS[m.Type]) throw badSignature('SNS');
  let ok = false;
  try {
    ok = createVerify(algorithm).update(canonicalString(m), 'utf8').verify(certificatePem, Buffer.from(m.Signature, 'base64'));
  } catch {
    ok = false; // not a certificate, or not an RSA one
  }
  if (!ok) throw badSignature('SNS');
}
