// Who DKIM-signs a domain's mail: the platform (the default) or the relay (PATCH /domains/:id).
import { Resolver } from 'node:dns/promises';
import { authenticate } from 'mailauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, verifiedUser, type ProjectAccess } from '../harness/accounts.ts';
import { publishRecords, uniqueDomain, verifiedDomain, type Domain, type DomainRecord } from '../harness/domains.ts';
import { startInstance, type Instance } from '../harness/instance.ts';
import type { ReceivedMessage } from '../harness/smtp-sink.ts';

const dkimOf = (d: { records: DomainRecord[] }) => d.records.find((r) => r.name.startsWith('mailroom._domainkey.'))!;

describe('DKIM signing by the platform or the relay', () => {
  let instance: Instance;
  let project: ProjectAccess;

  beforeAll(async () => {
    instance = await startInstance({ env: { EMAIL_RATE_PER_SECOND: '0' } });
    project = await newProject(instance, 'Signing');
  });
  afterAll(() => instance.dispose());

  const as = () => ({ auth: project.token });
  const patch = (id: string, body: unknown, auth = project.token) => instance.api.patch(`/domains/${id}`, body, { auth });
  let n = 0;
  async function sendFrom(domain: Domain): Promise<ReceivedMessage> {
    const to = `reader-${++n}@customer.example`;
    const res = await project.api.post('/v1/send', { to, from: `hello@${domain.domain}`, subject: 'Hello', body: '<p>Hello</p>' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return instance.smtp.waitForMailTo(to, 20_000);
  }
  async function dkimResult(mail: ReceivedMessage, domain: Domain) {
    const resolver = new Resolver();
    resolver.setServers([instance.dns.address]);
    const auth = await authenticate(mail.raw, {
      resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT'),
      sender: `hello@${domain.domain}`,
      ip: '127.0.0.1',
      helo: 'localhost',
      mta: 'sink.test',
    });
    return auth.dkim.results[0];
  }
  const signatureOf = (mail: ReceivedMessage) => mail.parsed.headers.find((h) => h.key === 'dkim-signature');

  it('mail from a domain the relay signs for leaves without a DKIM-Signature; from a platform domain, with one that verifies', async () => {
    const platform = await verifiedDomain(instance, project);
    const relay = await verifiedDomain(instance, project);
    expect(platform).toMatchObject({ dkimSigning: 'platform' });

    const changed = await patch(relay.id, { dkimSigning: 'relay' });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.data).toMatchObject({ id: relay.id, verified: true, dkimSigning: 'relay' });
    // The record stays listed (publishing it lets the platform sign again), no longer required.
    expect(dkimOf(changed.body.data)).toMatchObject({ value: dkimOf(relay).value, required: false });

    const unsigned = await sendFrom(relay);
    expect(signatureOf(unsigned)).toBeUndefined();
    const signed = await sendFrom(platform);
    expect(signatureOf(signed)).toBeDefined();
    const dkim = await dkimResult(signed, platform);
    expect(dkim.signingDomain).toBe(platform.domain);
    expect(dkim.status.result).toBe('pass');

    const listed = await instance.api.get(`/domains/project/${project.projectId}`, as());
    const byId = new Map((listed.body.data as Domain[]).map((d) => [d.id, d]));
    expect(byId.get(relay.id)).toMatchObject({ dkimSigning: 'relay' });
    expect(byId.get(platform.id)).toMatchObject({ dkimSigning: 'platform' });
  });

  it('a domain the relay signs for is verified by its ownership record alone', async () => {
    const added = await instance.api.post('/domains', { projectId: project.projectId, domain: uniqueDomain('relay') }, as());
    expect(added.status).toBe(201);
    const domain = added.body.data as Domain;
    expect((await patch(domain.id, { dkimSigning: 'relay' })).status).toBe(200);
    publishRecords(instance.dns, domain.records.filter((r) => r.name.startsWith('_mailroom.')));
    const verified = await instance.api.get(`/domains/${domain.id}/verify`, as());
    expect(verified.body.data.verified).toBe(true);
    expect(verified.body.data.records.find((r: DomainRecord) => r.name.startsWith('mailroom._domainkey.'))).toMatchObject({ required: false, found: false });
  });

  it('a verified domain goes back to platform signing only once its DKIM record is published: 422 before, signed after', async () => {
    const added = await instance.api.post('/domains', { projectId: project.projectId, domain: uniqueDomain('back') }, as());
    const domain = added.body.data as Domain;
    await patch(domain.id, { dkimSigning: 'relay' });
    publishRecords(instance.dns, domain.records.filter((r) => r.name.startsWith('_mailroom.')));
    expect((await instance.api.get(`/domains/${domain.id}/verify`, as())).body.data.verified).toBe(true);

    const refused = await patch(domain.id, { dkimSigning: 'platform' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(422);
    expect(refused.body.error).toMatchObject({ code: 'VALIDATION_ERROR', errors: [{ field: 'dkimSigning', code: 'dkim_record_missing' }] });
    expect(signatureOf(await sendFrom(domain))).toBeUndefined(); // unchanged: still the relay's to sign

    publishRecords(instance.dns, [dkimOf(domain)]);
    const accepted = await patch(domain.id, { dkimSigning: 'platform' });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(dkimOf(accepted.body.data).required).toBe(true);
    expect((await dkimResult(await sendFrom(domain), domain)).status.result).toBe('pass');
  });

  it('refuses an unknown signer with a 422 on dkimSigning, and a MEMBER with a 403; neither changes anything', async () => {
    const domain = await verifiedDomain(instance, project);
    const bad = await patch(domain.id, { dkimSigning: 'nobody' });
    expect(bad.status).toBe(422);
    expect(bad.body.error.errors.map((e: { field: string }) => e.field)).toEqual(['dkimSigning']);

    const member = await verifiedUser(instance);
    expect((await instance.api.post(`/projects/${project.projectId}/members`, { email: member.email, role: 'MEMBER' }, as())).status).toBe(201);
    expect((await patch(domain.id, { dkimSigning: 'relay' }, member.token)).status).toBe(403);

    const listed = await instance.api.get(`/domains/project/${project.projectId}`, as());
    expect((listed.body.data as Domain[]).find((d) => d.id === domain.id)).toMatchObject({ dkimSigning: 'platform' });
  });
});
