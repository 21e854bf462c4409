import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { z } from 'zod';
import { DKIM_SELECTOR } from './verification.ts';

const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/** 253 (DNS) less the longest prefix we publish records under, `mailroom._domainkey.`. */
const MAX_LENGTH = 253 - `${DKIM_SELECTOR}._domainkey.`.length;

/**
 * The canonical form of a domain name given by a user: trimmed, lower-case, without one trailing
 * dot, internationalised names in their ASCII (punycode) form. Returns the reason as a string when
 * the input is not a registrable host name: a protocol, path, port, IP address, single label,
 * `localhost`, an empty or over-long label, a name too long to carry its records, or characters a
 * host name cannot have.
 */
export function parseDomainName(input: string): { domain: string } | { error: string } {
  let name = input.trim().toLowerCase();
  if (isIP(name) || isIP(name.replace(/^\[|\]$/g, ''))) return { error: 'An IP address is not a domain name' };
  if (name.includes('://') || /^[a-z][a-z0-9+.-]*:(?!\d+$)/.test(name)) {
    return { error: 'Give the domain name only, without a protocol (e.g. "example.com", not "https://example.com")' };
  }
  if (/[/?#\\]/.test(name)) return { error: 'Give the domain name only, without a path (e.g. "example.com")' };
  if (name.includes('@')) return { error: 'Give the domain name, not an email address' };
  if (name.includes(':')) return { error: 'Give the domain name only, without a port' };
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (/[^\x00-\x7f]/.test(name)) {
    const ascii = domainToASCII(name);
    if (!ascii) return { error: 'Not a valid internationalised domain name' };
    name = ascii;
  }
  if (name === '') return { error: 'The domain name is empty' };
  if (name.length > MAX_LENGTH) {
    return { error: `A domain name has at most ${MAX_LENGTH} characters here, so that its DKIM record name fits in DNS's 253` };
  }
  const labels = name.split('.');
  if (labels.length < 2) {
    return { error: name === 'localhost' ? '"localhost" cannot be verified' : 'Give a full domain name such as "example.com"' };
  }
  if (labels.at(-1) === 'localhost') return { error: '"localhost" names cannot be verified' };
  for (const label of labels) {
    if (label === '') return { error: 'A domain name cannot have an empty label (two dots in a row, or a leading dot)' };
    if (label.length > 63) return { error: 'Each part of a domain name has at most 63 characters' };
    if (!LABEL.test(label)) {
      return { error: `"${label}" is not a valid part of a domain name: use letters, digits and inner hyphens` };
    }
  }
  if (/^\d+$/.test(labels.at(-1)!)) return { error: 'The last part of a domain name cannot be a number' };
  return { domain: name };
}

/** A zod schema for a `domain` field: validates and normalises (see `parseDomainName`). */
export const domainNameSchema = z
  .string()
  .max(1000)
  .transform((value, ctx) => {
    const parsed = parseDomainName(value);
    if ('error' in parsed) {
      ctx.addIssue({ code: 'custom', message: parsed.error });
      return z.NEVER;
    }
    return parsed.domain;
  });
