import { timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { addressMac, type LinkKey } from '../mail/links.ts';

/**
 * The envelope sender (MAIL FROM, the Return-Path) of one email: `b-<emailId>-<mac>@<domain>`
 * (VERP). Bounce reports come back to it, so the address alone names the email, and the MAC (the
 * link key's, purpose `bounce`) keeps anyone from making one: a report to a forged address is
 * refused at RCPT and changes nothing.
 */
const RETURN_PATH = /^b-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-([0-9a-f]{20})$/;

/** The subdomain of a sending domain that receives its bounces (when its MX points at us). */
export const bounceDomainOf = (domain: string) => `bounces.${domain}`;

/** A host name as the domain of an address: an IP address becomes a literal (`[127.0.0.1]`). */
export const addressDomain = (host: string) => (isIP(host.replace(/^\[|\]$/g, '')) ? `[${host.replace(/^\[|\]$/g, '')}]` : host);

/**
 * Where an email's bounces go: `bounces.<domain>` when the sender domain's bounce MX was found at
 * its last verification, otherwise the inbound host itself (always ours, so bounces of a domain
 * that skipped the optional record still come back).
 */
export function returnPathDomain(sender: { domain: string; bounceMx?: boolean } | null, inboundHost: string): string {
  return sender?.bounceMx ? bounceDomainOf(sender.domain) : addressDomain(inboundHost);
}

export function returnPath(key: LinkKey, emailId: string, domain: string): string {
  return `b-${emailId}-${addressMac(key, 'bounce', emailId)}@${domain}`;
}

/** Whether a local part looks like a Return-Path of ours (whether or not it verifies). */
export const isReturnPathLocalPart = (localPart: string) => RETURN_PATH.test(localPart.toLowerCase());

/** The email id of a Return-Path local part we made, or null (not one of ours, or forged). */
export function emailIdOfReturnPath(key: LinkKey, localPart: string): string | null {
  const match = RETURN_PATH.exec(localPart.toLowerCase());
  if (!match) return null;
  const [, emailId, given] = match;
  const expected = addressMac(key, 'bounce', emailId);
  return timingSafeEqual(Buffer.from(given), Buffer.from(expected)) ? emailId : null;
}
