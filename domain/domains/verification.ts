import { Resolver } from 'node:dns/promises';
import { bounceDomainOf } from '../inbound/return-path.ts';
import { dkimSignerOf, type DnsRecord, type DomainDoc } from './collection.ts';

/** The DKIM selector of every domain: the DKIM record lives at `mailroom._domainkey.<domain>`. */
export const DKIM_SELECTOR = 'mailroom';

export type RecordPurpose = 'ownership' | 'dkim' | 'spf' | 'dmarc' | 'bounce' | 'inbound';

export interface DomainRecord extends DnsRecord {
  purpose: RecordPurpose;
}

/**
 * Every record to publish for a domain, in the order a user works through them: the two the
 * verification needs (ownership, DKIM; DKIM only when the platform signs), then the recommended SPF and DMARC, then the optional MX
 * records pointing at the inbound listener: `bounces.<domain>` (the Return-Path of the domain's
 * mail moves there, aligned with the sender for DMARC) and the domain itself (to receive mail).
 */
export function domainRecords(doc: Pick<DomainDoc, 'domain' | 'verificationToken' | 'dkim' | 'dkimSigning'>, inboundHost: string): DomainRecord[] {
  return [
    { purpose: 'ownership', type: 'TXT', name: `_mailroom.${doc.domain}`, value: `mailroom-verification=${doc.verificationToken}`, required: true },
    {
      purpose: 'dkim',
      type: 'TXT',
      name: `${doc.dkim.selector}._domainkey.${doc.domain}`,
      value: `v=DKIM1; k=rsa; p=${doc.dkim.publicKey}`,
      // A domain the relay signs for does not need our key published (recommended: it lets the platform sign again).
      required: dkimSignerOf(doc) === 'platform',
    },
    { purpose: 'spf', type: 'TXT', name: doc.domain, value: 'v=spf1 mx ~all', required: false },
    { purpose: 'dmarc', type: 'TXT', name: `_dmarc.${doc.domain}`, value: 'v=DMARC1; p=none', required: false },
    { purpose: 'bounce', type: 'MX', name: bounceDomainOf(doc.domain), value: `10 ${inboundHost}`, required: false },
    { purpose: 'inbound', type: 'MX', name: doc.domain, value: `10 ${inboundHost}`, required: false },
  ];
}

/** An MX record is ours when its exchange is the inbound host, whatever its priority. */
const exchangeOf = (value: string) => value.trim().split(/\s+/).pop()!.toLowerCase().replace(/\.$/, '');

/** `k=v; k2=v2` tags of a DKIM record; whitespace around tags and inside values is dropped. */
function dkimTags(value: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of value.split(';')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    tags.set(part.slice(0, at).replace(/\s+/g, '').toLowerCase(), part.slice(at + 1).replace(/\s+/g, ''));
  }
  return tags;
}

/**
 * Whether one published TXT value (its chunks already joined) is the record we asked for.
 * Exact match (trimmed), except DKIM: there the key (`p=`) must be ours, `v` and `k` may be
 * absent but not different, and the tags may be in any order with any whitespace (RFC 6376 3.2).
 */
export function txtValueMatches(record: DomainRecord, published: string): boolean {
  if (published.trim() === record.value) return true;
  if (record.purpose !== 'dkim') return false;
  const want = dkimTags(record.value);
  const got = dkimTags(published);
  if (got.get('p') !== want.get('p')) return false;
  if (got.has('v') && got.get('v') !== 'DKIM1') return false;
  if (got.has('k') && got.get('k')!.toLowerCase() !== 'rsa') return false;
  return true;
}

export interface LookupOptions {
  /** `host:port` resolvers; empty means the system's. */
  servers: string[];
  /** Per-try timeout; default 2 s. */
  timeoutMs?: number;
  /** Default 2. */
  tries?: number;
}

/** Answers that only mean "nothing is published there". */
const ABSENT = new Set(['ENOTFOUND', 'ENODATA']);

export interface TxtLookup {
  /** Each TXT record's chunks joined; empty when nothing is found or the lookup failed. */
  values: string[];
  /** Why the lookup failed, when it did for another reason than "no such record". */
  failure?: string;
}

/**
 * The TXT values published at `name`. Any failure (no such name, no TXT, timeout, unreachable or
 * misconfigured resolver) is "nothing found", which is what the user needs to hear; the reason
 * of a real failure comes back in `failure` so that operators can see it.
 */
export const lookupTxt = (name: string, options: LookupOptions): Promise<TxtLookup> =>
  lookup(options, (resolver) => resolver.resolveTxt(name).then((records) => records.map((chunks) => chunks.join(''))));

/** The exchanges of the MX records at `name` (lower-case, no trailing dot), as `lookupTxt` fails. */
export const lookupMx = (name: string, options: LookupOptions): Promise<TxtLookup> =>
  lookup(options, (resolver) => resolver.resolveMx(name).then((records) => records.map((r) => exchangeOf(r.exchange))));

async function lookup(options: LookupOptions, query: (resolver: Resolver) => Promise<string[]>): Promise<TxtLookup> {
  const timeout = options.timeoutMs ?? 2000;
  const tries = options.tries ?? 2;
  const resolver = new Resolver({ timeout, tries, maxTimeout: timeout });
  let timer: NodeJS.Timeout | undefined;
  try {
    if (options.servers.length > 0) resolver.setServers(options.servers);
    // c-ares keeps its own clock; this bounds the whole lookup whatever it does.
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(Object.assign(new Error('DNS lookup timed out'), { code: 'ETIMEOUT' })), timeout * tries + 500);
    });
    return { values: await Promise.race([query(resolver), deadline]) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code && ABSENT.has(code)) return { values: [] };
    return { values: [], failure: code ?? (err as Error).message };
  } finally {
    clearTimeout(timer);
    resolver.cancel();
  }
}

export interface RecordCheck extends DomainRecord {
  found: boolean;
}

/**
 * Looks every record of the domain up afresh (all names at once) and says which are published;
 * `failures` names the lookups that failed for another reason than "not there".
 */
export async function checkRecords(
  records: DomainRecord[],
  options: LookupOptions,
): Promise<{ checks: RecordCheck[]; failures: { name: string; reason: string }[] }> {
  const key = (r: DomainRecord) => `${r.type} ${r.name}`;
  const unique = [...new Map(records.map((r) => [key(r), r])).values()];
  const lookups = new Map(
    await Promise.all(
      unique.map(async (r) => [key(r), await (r.type === 'MX' ? lookupMx(r.name, options) : lookupTxt(r.name, options))] as const),
    ),
  );
  const checks = records.map((record) => ({
    ...record,
    found: (lookups.get(key(record))?.values ?? []).some((value) =>
      record.type === 'MX' ? value === exchangeOf(record.value) : txtValueMatches(record, value),
    ),
  }));
  const failures = [...lookups].flatMap(([name, lookup]) => (lookup.failure ? [{ name, reason: lookup.failure }] : []));
  return { checks, failures };
}
