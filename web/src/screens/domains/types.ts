/** A sending domain as GET /domains/project/:projectId answers it (apps/api/routes/domains.ts). */
export interface DnsRecord {
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
  records: DnsRecord[];
}

/** GET /domains/:id/verify: every record looked up afresh. */
export interface VerifyResult {
  verified: boolean;
  records: (DnsRecord & { found: boolean })[];
}

