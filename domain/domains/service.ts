import { generateKeyPair, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { DuplicateKeyError } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { requireMember } from '../accounts/projects.ts';
import { AppError, invalid } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { dkimSignerOf, domains, type DkimSigner, type DnsRecord, type DomainDoc } from './collection.ts';
import { parseDomainName } from './name.ts';
import { checkRecords, DKIM_SELECTOR, domainRecords } from './verification.ts';

/** Who is calling: a signed-in user (rules 5-6 of the spec's Authentication). */
export interface DomainCaller {
  userId: string;
  emailVerified: boolean;
}

export interface DomainView {
  id: string;
  domain: string;
  projectId: string;
  verified: boolean;
  createdAt: string;
  verifiedAt: string | null;
  dkimSigning: DkimSigner;
  records: DnsRecord[];
}

const publicRecords = (doc: DomainDoc, inboundHost: string): DnsRecord[] =>
  domainRecords(doc, inboundHost).map(({ type, name, value, required }) => ({ type, name, value, required }));

/** What the API shows of a domain: never the DKIM private key or anything derived from it. */
export const domainView = (doc: DomainDoc, inboundHost: string): DomainView => ({
  id: doc._id,
  domain: doc.domain,
  projectId: doc.projectId,
  verified: doc.verified,
  createdAt: doc.createdAt,
  verifiedAt: doc.verifiedAt,
  dkimSigning: dkimSignerOf(doc),
  records: publicRecords(doc, inboundHost),
});

function requireVerifiedEmail(caller: DomainCaller): void {
  if (!caller.emailVerified) {
    throw new AppError('EMAIL_VERIFICATION_REQUIRED', 'Verify your email address before managing domains');
  }
}

const DOMAIN_NOT_FOUND = 'Domain not found';

/** The domain, when the caller is a member of its project (with `role`); 404 otherwise. */
async function domainForCaller(p: Platform, caller: DomainCaller, id: string, role?: 'ADMIN'): Promise<DomainDoc> {
  requireVerifiedEmail(caller);
  const doc = await domains(p.store).findOne({ _id: id });
  if (!doc) throw new AppError('NOT_FOUND', DOMAIN_NOT_FOUND);
  try {
    await requireMember(p, doc.projectId, caller.userId, role);
  } catch (err) {
    // Someone else's domain does not exist for the caller, whatever its project is called.
    if (err instanceof AppError && err.code === 'NOT_FOUND') throw new AppError('NOT_FOUND', DOMAIN_NOT_FOUND);
    throw err;
  }
  return doc;
}

const generateRsaKeyPair = promisify(generateKeyPair);

/** A fresh RSA-2048 pair: the public half as base64 SPKI DER (DKIM `p=`), the private as PKCS#8 PEM. */
async function newDkimKeys(): Promise<DomainDoc['dkim']> {
  const { publicKey, privateKey } = await generateRsaKeyPair('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return { selector: DKIM_SELECTOR, publicKey: publicKey.toString('base64'), privateKeyPem: privateKey };
}

function alreadyLinked(existing: DomainDoc | null, projectId: string, domain: string): AppError {
  const here = existing?.projectId === projectId;
  return new AppError('CONFLICT', here ? `${domain} is already added to this project` : `${domain} is linked to another project`, {
    suggestion: here
      ? 'Use the existing domain: GET /domains/project/:projectId lists it with its records.'
      : 'A domain can be linked to one project at a time; remove it from the other project first.',
  });
}

/** Adds a domain to a project (admin): unverified, with a new ownership token and DKIM key pair. */
export async function addDomain(p: Platform, caller: DomainCaller, projectId: string, name: string): Promise<DomainView> {
  requireVerifiedEmail(caller);
  await requireMember(p, projectId, caller.userId, 'ADMIN');
  // The route has normalised it already; every other caller gets the same canonical name.
  const parsed = parseDomainName(name);
  if ('error' in parsed) throw invalid('domain', parsed.error, 'invalid_domain');
  const { domain } = parsed;
  const collection = domains(p.store);
  // A cheap early answer; the unique index on `domain` is what decides a race.
  const existing = await collection.findOne({ domain }, { projection: { projectId: 1 } });
  if (existing) throw alreadyLinked(existing, projectId, domain);

  const doc: DomainDoc = {
    _id: newId(),
    projectId,
    domain,
    verified: false,
    verificationToken: randomBytes(24).toString('base64url'),
    dkim: await newDkimKeys(),
    createdAt: nowIso(),
    verifiedAt: null,
  };
  try {
    await collection.insertOne(doc);
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    throw alreadyLinked(await collection.findOne({ domain }, { projection: { projectId: 1 } }), projectId, domain);
  }
  p.log.info({ projectId, domainId: doc._id, domain }, 'domain added');
  return domainView(doc, p.config.inboundHost);
}

/** The project's domains, oldest first (any member). */
export async function listDomains(p: Platform, caller: DomainCaller, projectId: string): Promise<DomainView[]> {
  requireVerifiedEmail(caller);
  await requireMember(p, projectId, caller.userId);
  const docs = await domains(p.store).find({ projectId }, { sort: { _id: 1 } });
  return docs.map((doc) => domainView(doc, p.config.inboundHost));
}

export interface VerifyResult {
  verified: boolean;
  records: (DnsRecord & { found: boolean })[];
}

/**
 * A fresh DNS check of the domain's records (any member). When every required record is
 * published the domain becomes verified, and stays so: a later failing check does not undo it.
 */
export async function verifyDomain(p: Platform, caller: DomainCaller, id: string): Promise<VerifyResult> {
  const doc = await domainForCaller(p, caller, id);
  const { checks, failures } = await checkRecords(domainRecords(doc, p.config.inboundHost), { servers: p.config.dnsServers });
  if (failures.length > 0) {
    // The user hears "not found"; a resolver that times out or refuses is the operator's business.
    p.log.warn({ domainId: doc._id, domain: doc.domain, dnsServers: p.config.dnsServers, failures }, 'DNS lookups failed during domain verification');
  }
  const records = checks.map(({ type, name, value, required, found }) => ({ type, name, value, required, found }));
  const allRequired = checks.every((c) => !c.required || c.found);
  // Each check moves the Return-Path of the domain's mail to bounces.<domain> or back (verified or not).
  const bounceMx = checks.some((c) => c.purpose === 'bounce' && c.found);
  if (bounceMx !== (doc.bounceMx ?? false)) await domains(p.store).updateOne({ _id: doc._id }, { $set: { bounceMx } });
  if (doc.verified) return { verified: true, records };
  if (!allRequired) return { verified: false, records };

  const collection = domains(p.store);
  const updated = await collection.findOneAndUpdate({ _id: doc._id, verified: false }, { $set: { verified: true, verifiedAt: nowIso() } });
  if (!updated && !(await collection.findOne({ _id: doc._id }, { projection: { _id: 1 } }))) {
    // Removed while we were looking it up.
    throw new AppError('NOT_FOUND', DOMAIN_NOT_FOUND);
  }
  p.log.info({ projectId: doc.projectId, domainId: doc._id, domain: doc.domain }, 'domain verified');
  return { verified: true, records };
}

/**
 * Who DKIM-signs the domain's mail (admin): `relay` leaves it to the relay, `platform` (the
 * default) signs with the domain's key. Moving a verified domain back to `platform` needs its
 * DKIM record published now: mail signed with a key receivers cannot find fails DKIM, which is
 * worse than no signature. Takes effect for every email not yet rendered.
 */
export async function updateDomain(p: Platform, caller: DomainCaller, id: string, changes: { dkimSigning?: DkimSigner }): Promise<DomainView> {
  const doc = await domainForCaller(p, caller, id, 'ADMIN');
  const { dkimSigning } = changes;
  if (dkimSigning === undefined || dkimSigning === dkimSignerOf(doc)) return domainView(doc, p.config.inboundHost);
  if (dkimSigning === 'platform' && doc.verified) {
    const dkim = domainRecords(doc, p.config.inboundHost).filter((r) => r.purpose === 'dkim');
    const { checks } = await checkRecords(dkim, { servers: p.config.dnsServers });
    if (!checks.every((c) => c.found)) {
      throw new AppError('VALIDATION_ERROR', `Publish the DKIM record ${dkim[0].name} before the platform signs this domain's mail`, {
        fieldErrors: [{ field: 'dkimSigning', message: 'The DKIM record of the domain is not published', code: 'dkim_record_missing' }],
        suggestion: 'Publish the DKIM TXT record listed in records, then try again.',
      });
    }
  }
  const updated = await domains(p.store).findOneAndUpdate({ _id: doc._id }, { $set: { dkimSigning } });
  if (!updated) throw new AppError('NOT_FOUND', DOMAIN_NOT_FOUND); // removed meanwhile
  p.log.info({ projectId: doc.projectId, domainId: doc._id, domain: doc.domain, dkimSigning }, 'domain DKIM signing changed');
  return domainView(updated, p.config.inboundHost);
}

/** Removes a domain (admin). Sending from it stops at once: the sender check reads this collection. */
export async function removeDomain(p: Platform, caller: DomainCaller, id: string): Promise<{ deleted: true }> {
  const doc = await domainForCaller(p, caller, id, 'ADMIN');
  const deleted = await domains(p.store).deleteOne({ _id: doc._id, projectId: doc.projectId });
  if (deleted === 0) throw new AppError('NOT_FOUND', DOMAIN_NOT_FOUND);
  p.log.info({ projectId: doc.projectId, domainId: doc._id, domain: doc.domain }, 'domain removed');
  return { deleted: true };
}
