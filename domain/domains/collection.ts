import type { Doc, DocumentStore } from '../../ports/store.ts';

export interface DnsRecord {
  type: 'TXT' | 'MX' | 'CNAME';
  /** Fully qualified name. */
  name: string;
  /** The exact record data to publish. */
  value: string;
  required: boolean;
}

/** A sending domain: linked to one project at a time (unique `domain`). */
export interface DomainDoc extends Doc {
  projectId: string;
  /** Lower-case, no protocol, path or trailing dot. */
  domain: string;
  verified: boolean;
  /** The value of the ownership TXT record. */
  verificationToken: string;
  dkim: {
    selector: string;
    /** SubjectPublicKeyInfo, base64 DER: the `p=` of the DKIM record. */
    publicKey: string;
    /** PKCS#8 PEM; never leaves the service. */
    privateKeyPem: string;
  };
  createdAt: string;
  verifiedAt: string | null;
  /** Whether the last check found the `bounces.<domain>` MX pointing at us: the Return-Path's domain. */
  bounceMx?: boolean;
  /** Who DKIM-signs the domain's mail (absent: `platform`); see DKIM_SIGNERS. */
  dkimSigning?: DkimSigner;
}

/**
 * `platform`: the mailer signs every email with the domain's own key (its DKIM record is required).
 * `relay`: the relay signs (Amazon SES, Postmark and others sign with the customer's domain
 * themselves), so the mailer adds no signature and the record is only recommended.
 */
export const DKIM_SIGNERS = ['platform', 'relay'] as const;
export type DkimSigner = (typeof DKIM_SIGNERS)[number];

export const dkimSignerOf = (doc: Pick<DomainDoc, 'dkimSigning'>): DkimSigner => doc.dkimSigning ?? 'platform';

/** What the mailer signs a domain's mail with. */
export interface DkimSigning {
  domainName: string;
  keySelector: string;
  /** PKCS#8 PEM. */
  privateKeyPem: string;
}

/** The key the platform signs the domain's mail with; null when there is no domain or the relay signs. */
export function dkimSigningOf(domain: DomainDoc | null): DkimSigning | null {
  if (!domain || dkimSignerOf(domain) === 'relay') return null;
  return { domainName: domain.domain, keySelector: domain.dkim.selector, privateKeyPem: domain.dkim.privateKeyPem };
}

export const domains = (store: DocumentStore) => store.collection<DomainDoc>('domains');

export async function ensureDomainIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('domains', [{ keys: { domain: 1 }, unique: true }, { keys: { projectId: 1 } }]);
  store.cacheReads('domains'); // the mailer's sender check reads it for every email; it changes rarely
}

/** The part after the last @ of an address, lower-cased. */
export const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1).toLowerCase();
