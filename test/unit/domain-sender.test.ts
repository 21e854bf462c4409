import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';
import { createSign, createVerify, createPublicKey } from 'node:crypto';
import { createProject } from '../../domain/accounts/projects.ts';
import { ensureAccountIndexes } from '../../domain/accounts/collections.ts';
import { domains, ensureDomainIndexes, type DomainDoc } from '../../domain/domains/collection.ts';
import { requireVerifiedSender } from '../../domain/domains/sender.ts';
import { addDomain, removeDomain, verifyDomain } from '../../domain/domains/service.ts';
import { AppError } from '../../domain/errors.ts';
import type { Platform } from '../../runtime/platform.ts';
import { startDnsServer, type DnsServer } from '../harness/dns-server.ts';

let dir: string;
let store: SqliteStore;
let p: Platform;
let dns: DnsServer;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mailroom-domains-'));
  store = await openStore(dir);
  await ensureDomainIndexes(store);
  await ensureAccountIndexes(store);
  dns = await startDnsServer();
  p = embeddedPlatform(store, { DNS_SERVERS: dns.address });
});

afterEach(async () => {
  await dns.close();
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const domainDoc = (id: string, projectId: string, domain: string, verified: boolean): DomainDoc => ({
  _id: id,
  projectId,
  domain,
  verified,
  verificationToken: 'token',
  dkim: { selector: 'mailroom', publicKey: 'pub', privateKeyPem: 'priv' },
  createdAt: new Date().toISOString(),
  verifiedAt: verified ? new Date().toISOString() : null,
});

async function refusal(projectId: string, address: string): Promise<AppError> {
  const err = await requireVerifiedSender(p, projectId, address).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

it('accepts an address on a verified domain of the project, in any letter case', async () => {
  await domains(store).insertOne(domainDoc('d1', 'p1', 'example.com', true));
  expect((await requireVerifiedSender(p, 'p1', 'news@example.com'))._id).toBe('d1');
  expect((await requireVerifiedSender(p, 'p1', 'News@EXAMPLE.com'))._id).toBe('d1');
});

it('refuses an unverified domain, another project\'s domain and an unknown domain with 403 DOMAIN_NOT_VERIFIED', async () => {
  await domains(store).insertOne(domainDoc('d1', 'p1', 'pending.example.com', false));
  await domains(store).insertOne(domainDoc('d2', 'p2', 'theirs.example.com', true));
  for (const [projectId, address] of [
    ['p1', 'a@pending.example.com'],
    ['p1', 'a@theirs.example.com'],
    ['p1', 'a@unknown.example.com'],
    ['p1', 'a@sub.theirs.example.com'],
  ] as const) {
    const err = await refusal(projectId, address);
    expect(err.code).toBe('DOMAIN_NOT_VERIFIED');
    expect(err.statusCode).toBe(403);
    expect(err.message).toContain(address.split('@')[1]);
  }
});

it('refuses a verified domain at once after it is removed', async () => {
  await domains(store).insertOne(domainDoc('d1', 'p1', 'example.com', true));
  await requireVerifiedSender(p, 'p1', 'a@example.com');
  await domains(store).deleteOne({ _id: 'd1' });
  expect((await refusal('p1', 'a@example.com')).code).toBe('DOMAIN_NOT_VERIFIED');
});

it('the unique index keeps a domain on one project', async () => {
  await domains(store).insertOne(domainDoc('d1', 'p1', 'example.com', true));
  await expect(domains(store).insertOne(domainDoc('d2', 'p2', 'example.com', false))).rejects.toThrow(/duplicate key/);
});

it('through the domain service: refused while unverified, accepted once verified, refused at once after removal', async () => {
  const admin = { userId: 'u1', emailVerified: true };
  const project = await createProject(p, admin.userId, 'Sender');
  const added = await addDomain(p, admin, project.id, 'Mail.Example.com');
  expect((await refusal(project.id, 'hello@mail.example.com')).code).toBe('DOMAIN_NOT_VERIFIED');

  for (const r of added.records) dns.setTxt(r.name, [r.value]);
  expect((await verifyDomain(p, admin, added.id)).verified).toBe(true);
  const doc = await requireVerifiedSender(p, project.id, 'hello@mail.example.com');
  expect(doc._id).toBe(added.id);

  // The stored private key is the pair of the published DKIM key: what the mailer signs with.
  const dkim = added.records.find((r) => r.name === `mailroom._domainkey.mail.example.com`)!;
  const publicKey = createPublicKey({ key: Buffer.from(dkim.value.split('p=')[1]!, 'base64'), format: 'der', type: 'spki' });
  const signature = createSign('sha256').update('message').sign(doc.dkim.privateKeyPem);
  expect(createVerify('sha256').update('message').verify(publicKey, signature)).toBe(true);
  expect(doc.dkim.selector).toBe('mailroom');

  await removeDomain(p, admin, added.id);
  expect((await refusal(project.id, 'hello@mail.example.com')).code).toBe('DOMAIN_NOT_VERIFIED');
  expect(await domains(store).countDocuments({})).toBe(0);
});
