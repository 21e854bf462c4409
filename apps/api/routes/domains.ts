import { z } from 'zod';
import { DKIM_SIGNERS } from '../../../domain/domains/collection.ts';
import { domainNameSchema } from '../../../domain/domains/name.ts';
import { addDomain, listDomains, removeDomain, updateDomain, verifyDomain } from '../../../domain/domains/service.ts';
import type { Platform } from '../../../runtime/platform.ts';
import { route, type RouteSpec } from '../http/route.ts';
import { idParams } from './common.ts';

const record = z.object({
  type: z.enum(['TXT', 'MX', 'CNAME']),
  name: z.string().describe('Fully qualified name'),
  value: z.string().describe('The exact record data to publish (MX: `<priority> <exchange>`)'),
  required: z.boolean().describe(
    'Needed for verification; the others are recommended. The optional MX records point at INBOUND_HOST: `bounces.<domain>` moves the Return-Path of the domain\'s mail there (else INBOUND_HOST), `<domain>` receives its mail as `email.received`',
  ),
});
const domain = z.object({
  id: z.string(),
  domain: z.string(),
  projectId: z.string(),
  verified: z.boolean(),
  createdAt: z.string(),
  verifiedAt: z.string().nullable(),
  dkimSigning: z.enum(DKIM_SIGNERS).describe(
    'Who DKIM-signs the mail from this domain: `platform` (default) with the DKIM record listed here, or `relay` when the relay (Amazon SES, Postmark, …) signs it with the domain itself',
  ),
  records: z.array(record),
});

export function domainRoutes(p: Platform): RouteSpec[] {
  return [
    route({
      method: 'get', path: '/domains/project/:projectId', tag: 'Domains', auth: 'user', errors: [404], needs: { verifiedEmail: true },
      summary: "The project's sending domains with the DNS records to publish (member, verified email)",
      params: z.object({ projectId: z.string().min(1).max(200) }),
      response: z.array(domain),
      handle: ({ auth, params }) => listDomains(p, auth, params.projectId),
    }),
    route({
      method: 'post', path: '/domains', tag: 'Domains', auth: 'user', status: 201, errors: [404, 409], needs: { admin: true, verifiedEmail: true },
      summary: 'Add a sending domain to a project, unverified, with its DNS records (admin, verified email)',
      body: z.strictObject({
        projectId: z.string().min(1).max(200),
        domain: domainNameSchema.describe('A domain name such as "example.com": no protocol, path or port'),
      }),
      response: domain,
      handle: ({ auth, body }) => addDomain(p, auth, body.projectId, body.domain),
    }),
    route({
      method: 'get', path: '/domains/:id/verify', tag: 'Domains', auth: 'user', errors: [404], needs: { verifiedEmail: true },
      summary: 'Look the DNS records up afresh; verified once every required record is published (member)',
      params: idParams,
      response: z.object({ verified: z.boolean(), records: z.array(record.extend({ found: z.boolean() })) }),
      handle: ({ auth, params }) => verifyDomain(p, auth, params.id),
    }),
    route({
      method: 'patch', path: '/domains/:id', tag: 'Domains', auth: 'user', errors: [404], needs: { admin: true, verifiedEmail: true },
      summary:
        'Choose who DKIM-signs the domain\'s mail (admin, verified email). `relay`: the platform adds no signature and the DKIM ' +
        'record becomes recommended; `platform`: signed with the domain\'s key, whose DKIM record must be published when the domain is verified (422 otherwise)',
      params: idParams,
      body: z.strictObject({ dkimSigning: z.enum(DKIM_SIGNERS).optional() }),
      response: domain,
      handle: ({ auth, params, body }) => updateDomain(p, auth, params.id, body),
    }),
    route({
      method: 'delete', path: '/domains/:id', tag: 'Domains', auth: 'user', errors: [404], needs: { admin: true, verifiedEmail: true },
      summary: 'Remove a domain; sending from it stops at once (admin, verified email)',
      params: idParams,
      response: z.object({ deleted: z.literal(true) }),
      handle: ({ auth, params }) => removeDomain(p, auth, params.id),
    }),
  ];
}
