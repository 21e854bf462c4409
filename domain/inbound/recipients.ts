import type { Platform } from '../../runtime/platform.ts';
import { domains } from '../domains/collection.ts';
import { linkKey } from '../mail/links.ts';
import { addressDomain, emailIdOfReturnPath, isReturnPathLocalPart } from './return-path.ts';

/**
 * What the inbound listener does with one RCPT TO, decided before the message is taken:
 * - a Return-Path of ours (any domain: its MAC is the authority): the report is about that email;
 * - `fbl@` the inbound host or a `bounces.` domain: a feedback loop address to register with
 *   mailbox providers; its reports name the email by the Message-ID they quote;
 * - any address at a verified domain: inbound mail for that domain's project;
 * - anything else, a forged Return-Path included, is refused (550), so it changes nothing.
 */
export type Destination =
  | { kind: 'returnPath'; emailId: string }
  | { kind: 'feedbackLoop' }
  | { kind: 'mailbox'; projectId: string; domain: string }
  | { kind: 'refused'; reason: string };

export const FEEDBACK_LOOP_LOCAL_PART = 'fbl';

export async function destinationOf(p: Platform, address: string): Promise<Destination> {
  const at = address.lastIndexOf('@');
  if (at <= 0) return { kind: 'refused', reason: 'No such recipient here' };
  const local = address.slice(0, at);
  const domain = address.slice(at + 1).toLowerCase().replace(/\.$/, '');
  if (isReturnPathLocalPart(local)) {
    const emailId = emailIdOfReturnPath(await linkKey(p), local);
    return emailId ? { kind: 'returnPath', emailId } : { kind: 'refused', reason: 'No such recipient here' };
  }
  const ours = domain === addressDomain(p.config.inboundHost) || domain.startsWith('bounces.');
  if (ours && local.toLowerCase() === FEEDBACK_LOOP_LOCAL_PART) return { kind: 'feedbackLoop' };
  const owner = await domains(p.store).findOne({ domain, verified: true }, { projection: { projectId: 1 } });
  if (owner) return { kind: 'mailbox', projectId: owner.projectId, domain };
  return { kind: 'refused', reason: `Relay access denied: ${domain} is not a domain this server receives mail for` };
}
