import { createPublicKey } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newProject, verifiedUser, type ProjectAccess } from '../harness/accounts.ts';
import type { ApiResponse } from '../harness/client.ts';
import { publishRecords, uniqueDomain, verifiedDomain, type Domain, type DomainRecord } from '../harness/domains.ts';
import { startInstance, type Instance } from '../harness/instance.ts';

function expectError(res: ApiResponse, status: number, code: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body.success).toBe(false);
  expect(res.body.error.code).toBe(code);
  expect(res.body.error.statusCode).toBe(status);
}

const fieldsOf = (res: ApiResponse): string[] => res.body.error.errors.map((e: { field: string }) => e.field);

const ownershipOf = (d: { records: DomainRecord[] }) => d.records.find((r) => r.name.startsWith('_mailroom.'))!;
const dkimOf = (d: { records: DomainRecord[] }) => d.records.find((r) => r.name.startsWith('mailroom._domainkey.'))!;

describe.concurrent('sending domains', () => {
  let instance: Instance;
  /** Every response body this suite received, to prove the DKIM private key never leaves. */
  const seen: string[] = [];

  beforeAll(async () => {
    instance = await startInstance();
  });
  afterAll(async () => {
    // The private key (PKCS#8 PEM, base64 "MIIE…") appears in no response of any test above.
    expect(seen.length).toBeGreaterThan(20);
    for (const body of seen) {
      expect(body).not.toMatch(/PRIVATE KEY|privateKey|MIIE[vw]/);
      expect(body).not.toMatch(/"dkim"|verificationToken/);
    }
    await instance.dispose();
  });

  const record = async (res: Promise<ApiResponse>) => {
    const r = await res;
    seen.push(JSON.stringify(r.body));
    return r;
  };
  const post = (token: string, path: string, body: unknown) => record(instance.api.post(path, body, { auth: token }));
  const get = (token: string, path: string) => record(instance.api.get(path, { auth: token }));
  const del = (token: string, path: string) => record(instance.api.delete(path, undefined, { auth: token }));

  const add = (owner: ProjectAccess, domain: string) => post(owner.token, '/domains', { projectId: owner.projectId, domain });
  const verify = (token: string, id: string) => get(token, `/domains/${id}/verify`);
  const list = (token: string, projectId: string) => get(token, `/domains/project/${projectId}`);

  async function added(owner: ProjectAccess, domain = uniqueDomain('add')): Promise<Domain> {
    const res = await add(owner, domain);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.data;
  }

  /** A project with a second user as MEMBER and a third user in no project. */
  async function team() {
    const owner = await newProject(instance, 'Domains');
    const member = await verifiedUser(instance);
    const stranger = await verifiedUser(instance);
    const res = await instance.api.post(`/projects/${owner.projectId}/members`, { email: member.email, role: 'MEMBER' }, { auth: owner.token });
    expect(res.status).toBe(201);
    return { owner, member, stranger };
  }

  describe('adding a domain', () => {
    it('answers 201 with the unverified Domain and the six records to publish', async () => {
      const owner = await newProject(instance);
      const name = uniqueDomain('shape');
      const res = await add(owner, name);
      expect(res.status).toBe(201);
      expect(res.body.success).toBe(true);
      const d = res.body.data;
      expect(d).toEqual({
        id: expect.any(String),
        domain: name,
        projectId: owner.projectId,
        verified: false,
        createdAt: expect.any(String),
        verifiedAt: null,
        dkimSigning: 'platform',
        records: expect.any(Array),
      });
      expect(new Date(d.createdAt).toISOString()).toBe(d.createdAt);

      const token = /^mailroom-verification=([\w-]{24,})$/.exec(ownershipOf(d).value)?.[1];
      expect(token).toBeDefined();
      const key = /^v=DKIM1; k=rsa; p=([A-Za-z0-9+/=]+)$/.exec(dkimOf(d).value)?.[1];
      expect(key).toBeDefined();
      expect(d.records).toEqual([
        { type: 'TXT', name: `_mailroom.${name}`, value: `mailroom-verification=${token}`, required: true },
        { type: 'TXT', name: `mailroom._domainkey.${name}`, value: `v=DKIM1; k=rsa; p=${key}`, required: true },
        { type: 'TXT', name, value: 'v=spf1 mx ~all', required: false },
        { type: 'TXT', name: `_dmarc.${name}`, value: 'v=DMARC1; p=none', required: false },
        // The inbound listener's host (INBOUND_HOST, here PUBLIC_URL's): bounces, then inbound mail.
        { type: 'MX', name: `bounces.${name}`, value: '10 127.0.0.1', required: false },
        { type: 'MX', name, value: '10 127.0.0.1', required: false },
      ]);
      // The DKIM key is a real 2048-bit RSA public key (SubjectPublicKeyInfo, DER, base64).
      const publicKey = createPublicKey({ key: Buffer.from(key!, 'base64'), format: 'der', type: 'spki' });
      expect(publicKey.asymmetricKeyType).toBe('rsa');
      expect(publicKey.asymmetricKeyDetails?.modulusLength).toBe(2048);

      const listed = await list(owner.token, owner.projectId);
      expect(listed.status).toBe(200);
      expect(listed.body.data).toEqual([d]);
    });

    it('each domain gets its own ownership token and DKIM key', async () => {
      const owner = await newProject(instance);
      const a = await added(owner);
      const b = await added(owner);
      expect(ownershipOf(a).value).not.toBe(ownershipOf(b).value);
      expect(dkimOf(a).value).not.toBe(dkimOf(b).value);
      const listed = await list(owner.token, owner.projectId);
      expect(listed.body.data.map((d: Domain) => d.id)).toEqual([a.id, b.id]);
    });

    it('the name is lower-cased and loses a trailing dot', async () => {
      const owner = await newProject(instance);
      const name = uniqueDomain('Case');
      const d = await added(owner, `${name.toUpperCase()}.`);
      expect(d.domain).toBe(name.toLowerCase());
      expect(ownershipOf(d).name).toBe(`_mailroom.${name.toLowerCase()}`);
      // The same name in another form is the same domain.
      expectError(await add(owner, name.toLowerCase()), 409, 'CONFLICT');
    });

    it('refuses what is not a domain name with a 422 on field `domain`, and adds nothing', async () => {
      const owner = await newProject(instance);
      const bad = [
        'https://x.com',
        'http://example.com/',
        'x.com/path',
        'x.com:25',
        '127.0.0.1',
        '::1',
        'localhost',
        'com',
        'a..b',
        'bad_label.example.com',
        '-x.example.com',
        `${'a'.repeat(64)}.example.com`,
        'x'.repeat(300),
        // 247 characters: a host name, but mailroom._domainkey.<it> would not fit in DNS's 253.
        `${'a'.repeat(60)}.${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.com`,
        '',
        '   ',
        'me@example.com',
      ];
      for (const domain of bad) {
        const res = await add(owner, domain);
        expectError(res, 422, 'VALIDATION_ERROR');
        expect(fieldsOf(res), domain).toEqual(['domain']);
        expect(res.body.error.errors[0].message.length).toBeGreaterThan(0);
      }
      for (const body of [{ projectId: owner.projectId }, { projectId: owner.projectId, domain: 42 }]) {
        const res = await post(owner.token, '/domains', body);
        expectError(res, 422, 'VALIDATION_ERROR');
        expect(fieldsOf(res)).toEqual(['domain']);
      }
      const noProject = await post(owner.token, '/domains', { domain: uniqueDomain() });
      expectError(noProject, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(noProject)).toEqual(['projectId']);
      const extra = await post(owner.token, '/domains', { projectId: owner.projectId, domain: uniqueDomain(), verified: true });
      expectError(extra, 422, 'VALIDATION_ERROR');
      expect(fieldsOf(extra)).toEqual(['verified']);

      expect((await list(owner.token, owner.projectId)).body.data).toEqual([]);
    });

    it('a domain on another project is a 409 CONFLICT, and the first project keeps it', async () => {
      const first = await newProject(instance);
      const second = await newProject(instance);
      const name = uniqueDomain('taken');
      const d = await added(first, name);

      const res = await add(second, name);
      expectError(res, 409, 'CONFLICT');
      expect(res.body.error.message).toMatch(/another project/);
      expectError(await add(second, name.toUpperCase()), 409, 'CONFLICT');
      const again = await add(first, name);
      expectError(again, 409, 'CONFLICT');
      expect(again.body.error.message).toMatch(/already added to this project/);

      expect((await list(first.token, first.projectId)).body.data).toEqual([d]);
      expect((await list(second.token, second.projectId)).body.data).toEqual([]);
      // Its records still verify it for the first project.
      publishRecords(instance.dns, d.records);
      expect((await verify(first.token, d.id)).body.data.verified).toBe(true);
    });

    it('two projects adding one domain at the same moment: exactly one gets it', async () => {
      const a = await newProject(instance);
      const b = await newProject(instance);
      const name = uniqueDomain('race');
      const results = await Promise.all([add(a, name), add(b, name)]);
      expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
      const winner = results[0]!.status === 201 ? a : b;
      const loser = winner === a ? b : a;
      expect((await list(winner.token, winner.projectId)).body.data.map((d: Domain) => d.domain)).toEqual([name]);
      expect((await list(loser.token, loser.projectId)).body.data).toEqual([]);
    });

    it('an unknown project is a 404', async () => {
      const user = await verifiedUser(instance);
      expectError(await post(user.token, '/domains', { projectId: 'no-such-project', domain: uniqueDomain() }), 404, 'NOT_FOUND');
    });
  });

  describe('verification', () => {
    it('records published exactly as returned verify the domain; it stays verified', async () => {
      const owner = await newProject(instance);
      const d = await added(owner);

      // A fresh lookup on every call: nothing published yet, then published, with no other step.
      const before = await verify(owner.token, d.id);
      expect(before.status).toBe(200);
      expect(before.body.data.verified).toBe(false);

      publishRecords(instance.dns, d.records);
      const res = await verify(owner.token, d.id);
      expect(res.status).toBe(200);
      expect(res.body.success).toBe(true);
      expect(res.body.data).toEqual({ verified: true, records: d.records.map((r) => ({ ...r, found: true })) });

      const listed = (await list(owner.token, owner.projectId)).body.data[0];
      expect(listed.verified).toBe(true);
      expect(new Date(listed.verifiedAt).getTime()).toBeGreaterThanOrEqual(new Date(d.createdAt).getTime());

      // Taking the records down later does not undo it; the answer shows what is missing now.
      for (const r of d.records) instance.dns.clear(r.name);
      const later = await verify(owner.token, d.id);
      expect(later.body.data.verified).toBe(true);
      expect(later.body.data.records.map((r: { found: boolean }) => r.found)).toEqual([false, false, false, false, false, false]);
      const relisted = (await list(owner.token, owner.projectId)).body.data[0];
      expect(relisted).toMatchObject({ verified: true, verifiedAt: listed.verifiedAt });
    });

    it('only the required records are needed; SPF, DMARC and the MX records are reported but optional', async () => {
      const owner = await newProject(instance);
      const d = await added(owner);
      publishRecords(instance.dns, d.records.filter((r) => r.required));
      const res = await verify(owner.token, d.id);
      expect(res.body.data.verified).toBe(true);
      expect(res.body.data.records.map((r: { required: boolean; found: boolean }) => [r.required, r.found])).toEqual([
        [true, true],
        [true, true],
        [false, false],
        [false, false],
        [false, false],
        [false, false],
      ]);
    });

    it('nothing published: verified false with every record missing, not an error', async () => {
      const owner = await newProject(instance);
      const d = await added(owner);
      const res = await verify(owner.token, d.id);
      expect(res.status).toBe(200);
      expect(res.body.data.verified).toBe(false);
      expect(res.body.data.records).toEqual(d.records.map((r) => ({ ...r, found: false })));
      expect((await list(owner.token, owner.projectId)).body.data[0]).toMatchObject({ verified: false, verifiedAt: null });
    });

    it('only the ownership record: still unverified, and the DKIM record is the one missing', async () => {
      const owner = await newProject(instance);
      const d = await added(owner);
      publishRecords(instance.dns, [ownershipOf(d)]);
      const res = await verify(owner.token, d.id);
      expect(res.body.data.verified).toBe(false);
      const found = Object.fromEntries(res.body.data.records.map((r: DomainRecord & { found: boolean }) => [r.name, r.found]));
      expect(found[ownershipOf(d).name]).toBe(true);
      expect(found[dkimOf(d).name]).toBe(false);
    });

    it('a wrong DKIM key keeps it unverified; the right one, chunked and with tags reordered, verifies it', async () => {
      const owner = await newProject(instance);
      const d = await added(owner);
      const dkim = dkimOf(d);
      const key = dkim.value.slice(dkim.value.indexOf('p=') + 2);
      const other = await added(owner);

      publishRecords(instance.dns, [ownershipOf(d), { ...dkim, value: dkimOf(other).value }]);
      let res = await verify(owner.token, d.id);
      expect(res.body.data.verified).toBe(false);
      expect(res.body.data.records.find((r: DomainRecord) => r.name === dkim.name).found).toBe(false);
      expect(res.body.data.records.find((r: DomainRecord) => r.name === ownershipOf(d).name).found).toBe(true);

      // A key one character short is not the key either.
      instance.dns.setTxt(dkim.name, [dkim.value.slice(0, -2)]);
      expect((await verify(owner.token, d.id)).body.data.verified).toBe(false);

      // How DNS consoles often publish it: in 255-byte strings, other tag order and spacing.
      const text = `k=rsa;  v=DKIM1 ;p=${key}`;
      instance.dns.setTxt(dkim.name, ['unrelated=1', [text.slice(0, 200), text.slice(200)]]);
      res = await verify(owner.token, d.id);
      expect(res.body.data.verified).toBe(true);
      expect(res.body.data.records.find((r: DomainRecord) => r.name === dkim.name).found).toBe(true);
    });

    it("another domain's ownership record does not verify this one", async () => {
      const owner = await newProject(instance);
      const d = await added(owner);
      const other = await added(owner);
      publishRecords(instance.dns, [{ ...ownershipOf(other), name: ownershipOf(d).name }, dkimOf(d)]);
      const res = await verify(owner.token, d.id);
      expect(res.body.data.verified).toBe(false);
      expect(res.body.data.records.find((r: DomainRecord) => r.name === ownershipOf(d).name).found).toBe(false);
    });

    it('an unknown domain id is a 404', async () => {
      const owner = await newProject(instance);
      expectError(await verify(owner.token, 'no-such-domain'), 404, 'NOT_FOUND');
    });

    it('the verifiedDomain harness gives a verified domain of the project', async () => {
      const owner = await newProject(instance);
      const d = await verifiedDomain(instance, owner);
      expect(d).toMatchObject({ projectId: owner.projectId, verified: true, verifiedAt: expect.any(String) });
      seen.push(JSON.stringify(d));
    });
  });

  describe('removing a domain', () => {
    it('an admin removes it: gone from the list, 404 afterwards, and free for another project', async () => {
      const first = await newProject(instance);
      const second = await newProject(instance);
      const d = await verifiedDomain(instance, first);
      seen.push(JSON.stringify(d));

      const res = await del(first.token, `/domains/${d.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ success: true, data: { deleted: true } });
      expect((await list(first.token, first.projectId)).body.data).toEqual([]);
      expectError(await verify(first.token, d.id), 404, 'NOT_FOUND');
      expectError(await del(first.token, `/domains/${d.id}`), 404, 'NOT_FOUND');

      // Another project can add it now, with new records; the ones still published (the old
      // project's) do not verify it.
      const again = await added(second, d.domain);
      expect(again.id).not.toBe(d.id);
      expect(again.verified).toBe(false);
      expect(ownershipOf(again).value).not.toBe(ownershipOf(d).value);
      expect(dkimOf(again).value).not.toBe(dkimOf(d).value);
      const check = await verify(second.token, again.id);
      expect(check.body.data.verified).toBe(false);
      publishRecords(instance.dns, again.records);
      expect((await verify(second.token, again.id)).body.data.verified).toBe(true);
    });
  });

  describe('who may do what', () => {
    it('a MEMBER can list and verify, but adding and removing are 403 FORBIDDEN', async () => {
      const { owner, member } = await team();
      const d = await added(owner);

      expectError(await add({ ...owner, token: member.token }, uniqueDomain()), 403, 'FORBIDDEN');
      expectError(await del(member.token, `/domains/${d.id}`), 403, 'FORBIDDEN');

      const listed = await list(member.token, owner.projectId);
      expect(listed.status).toBe(200);
      expect(listed.body.data).toEqual([d]);
      publishRecords(instance.dns, d.records);
      const res = await verify(member.token, d.id);
      expect(res.status).toBe(200);
      expect(res.body.data.verified).toBe(true);
      expect((await list(owner.token, owner.projectId)).body.data.map((x: Domain) => x.id)).toEqual([d.id]);
    });

    it('a user outside the project gets 404 everywhere, and changes nothing', async () => {
      const { owner, stranger } = await team();
      const d = await added(owner);
      publishRecords(instance.dns, d.records);

      expectError(await add({ ...owner, token: stranger.token }, uniqueDomain()), 404, 'NOT_FOUND');
      expectError(await list(stranger.token, owner.projectId), 404, 'NOT_FOUND');
      expectError(await verify(stranger.token, d.id), 404, 'NOT_FOUND');
      expectError(await del(stranger.token, `/domains/${d.id}`), 404, 'NOT_FOUND');

      // Even an admin of another project: the domain is addressed by id, its project decides.
      const elsewhere = await newProject(instance);
      expectError(await verify(elsewhere.token, d.id), 404, 'NOT_FOUND');
      expectError(await del(elsewhere.token, `/domains/${d.id}`), 404, 'NOT_FOUND');
      expectError(await list(elsewhere.token, owner.projectId), 404, 'NOT_FOUND');

      const listed = (await list(owner.token, owner.projectId)).body.data;
      expect(listed).toEqual([d]);
      expect(listed[0].verified).toBe(false);
    });

    it('a user whose email is not verified gets 403 EMAIL_VERIFICATION_REQUIRED on every domain endpoint, even as admin', async () => {
      const owner = await newProject(instance);
      const d = await added(owner);
      publishRecords(instance.dns, d.records);

      const email = `unverified-${Date.now()}-${Math.random().toString(36).slice(2)}@example.com`;
      const signup = await instance.api.post('/auth/signup', { email, password: 'correct horse battery' });
      expect(signup.status).toBe(201);
      const token = signup.body.data.token as string;
      const promoted = await instance.api.post(`/projects/${owner.projectId}/members`, { email, role: 'ADMIN' }, { auth: owner.token });
      expect(promoted.status).toBe(201);

      expectError(await post(token, '/domains', { projectId: owner.projectId, domain: uniqueDomain() }), 403, 'EMAIL_VERIFICATION_REQUIRED');
      expectError(await list(token, owner.projectId), 403, 'EMAIL_VERIFICATION_REQUIRED');
      expectError(await verify(token, d.id), 403, 'EMAIL_VERIFICATION_REQUIRED');
      expectError(await del(token, `/domains/${d.id}`), 403, 'EMAIL_VERIFICATION_REQUIRED');

      // Their own project too.
      const own = await instance.api.post('/projects', { name: 'Mine' }, { auth: token });
      expect(own.status).toBe(201);
      expectError(await post(token, '/domains', { projectId: own.body.data.id, domain: uniqueDomain() }), 403, 'EMAIL_VERIFICATION_REQUIRED');

      // Nothing happened: still listed and unverified.
      const listed = (await list(owner.token, owner.projectId)).body.data;
      expect(listed.map((x: Domain) => [x.id, x.verified])).toEqual([[d.id, false]]);
    });

    it('domain endpoints take a session, not an API key (401)', async () => {
      const owner = await newProject(instance);
      const d = await added(owner);
      expectError(await post(owner.secretKey, '/domains', { projectId: owner.projectId, domain: uniqueDomain() }), 401, 'UNAUTHORIZED');
      expectError(await list(owner.secretKey, owner.projectId), 401, 'UNAUTHORIZED');
      expectError(await verify(owner.secretKey, d.id), 401, 'UNAUTHORIZED');
      expectError(await del(owner.secretKey, `/domains/${d.id}`), 401, 'UNAUTHORIZED');
      expectError(await instance.api.get(`/domains/project/${owner.projectId}`), 401, 'UNAUTHORIZED');
    });
  });
});
