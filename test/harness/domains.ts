import type { ProjectAccess } from './accounts.ts';
import type { DnsServer } from './dns-server.ts';
import type { Instance } from './instance.ts';

export interface DomainRecord {
  type: 'TXT' | 'MX' | 'CNAME';
  name: string;
  value: string;
  required: boolean;
}

export interface Domain {
  id: string;
  domain: string;
  projectId: string;
  verified: boolean;
  createdAt: string;
  verifiedAt: string | null;
  dkimSigning: 'platform' | 'relay';
  records: DomainRecord[];
}

let counter = 0;

/** A domain name no other test uses. */
export const uniqueDomain = (tag = 'send') => `${tag}-${++counter}-${Date.now().toString(36)}.example.com`;

/**
 * Publishes records in the DNS server exactly as the API gave them: all TXT values of one name
 * together (a name may carry several records), and the MX records (`<priority> <exchange>`).
 * Existing TXT and MX records of those names are replaced.
 */
export function publishRecords(dns: DnsServer, records: DomainRecord[]): void {
  const byName = new Map<string, string[]>();
  const mx = new Map<string, { priority: number; exchange: string }[]>();
  for (const record of records) {
    if (record.type === 'MX') {
      const [priority, exchange] = record.value.split(/\s+/);
      mx.set(record.name, [...(mx.get(record.name) ?? []), { priority: Number(priority), exchange }]);
    }
    if (record.type !== 'TXT') continue;
    byName.set(record.name, [...(byName.get(record.name) ?? []), record.value]);
  }
  for (const [name, values] of byName) dns.setTxt(name, values);
  for (const [name, exchanges] of mx) dns.setMx(name, exchanges);
}

/**
 * A sending domain added to the project through the API, its records published in the
 * instance's DNS server, and verified through `GET /domains/:id/verify`. Returns the Domain as
 * the API lists it afterwards (verified: true).
 */
export async function verifiedDomain(instance: Instance, project: ProjectAccess, domain = uniqueDomain()): Promise<Domain> {
  const as = { auth: project.token };
  const added = await instance.api.post('/domains', { projectId: project.projectId, domain }, as);
  if (added.status !== 201) throw new Error(`adding ${domain} failed: ${JSON.stringify(added.body)}`);
  const created = added.body.data as Domain;
  publishRecords(instance.dns, created.records);
  const verified = await instance.api.get(`/domains/${created.id}/verify`, as);
  if (verified.status !== 200 || verified.body.data.verified !== true) {
    throw new Error(`verifying ${domain} failed: ${JSON.stringify(verified.body)}`);
  }
  const list = await instance.api.get(`/domains/project/${project.projectId}`, as);
  const found = (list.body.data as Domain[]).find((d) => d.id === created.id);
  if (!found?.verified) throw new Error(`${domain} is not listed as verified: ${JSON.stringify(list.body)}`);
  return found;
}
