import type { Platform } from '../../runtime/platform.ts';
import { AppError } from '../errors.ts';
import { hashToken, newId, newToken, nowIso } from '../ids.ts';
import type { FooterSettings } from '../mail/footer.ts';
import { accounts, type ProjectDoc, type Role } from './collections.ts';

export interface IssuedKeys {
  secretKey: string;
  publicKey: string;
}

function issueKeys(): IssuedKeys & { secretKeyHash: string; publicKeyHash: string } {
  const secretKey = newToken('sk_');
  const publicKey = newToken('pk_');
  return { secretKey, publicKey, secretKeyHash: hashToken(secretKey), publicKeyHash: hashToken(publicKey) };
}

const projectView = (p: ProjectDoc) => ({
  id: p._id,
  name: p.name,
  language: p.language,
  address: p.address ?? '',
  footer: p.footer ?? true,
  createdAt: p.createdAt,
});

/** Keys are returned only here and on rotation: at rest they exist only as hashes. */
export async function createProject(p: Platform, userId: string, name: string, language = 'en') {
  const { projects, memberships } = accounts(p.store);
  const keys = issueKeys();
  const project: ProjectDoc = {
    _id: newId(),
    name,
    language,
    secretKeyHash: keys.secretKeyHash,
    publicKeyHash: keys.publicKeyHash,
    createdAt: nowIso(),
  };
  await projects.insertOne(project);
  await memberships.insertOne({
    _id: `${project._id}/${userId}`,
    projectId: project._id,
    userId,
    role: 'ADMIN',
    createdAt: project.createdAt,
  });
  return { ...projectView(project), secretKey: keys.secretKey, publicKey: keys.publicKey };
}

export async function listProjects(p: Platform, userId: string) {
  const { projects, memberships } = accounts(p.store);
  const mine = await memberships.find({ userId }, { sort: { createdAt: 1 } });
  const docs = await projects.find({ _id: { $in: mine.map((m) => m.projectId) } });
  const byId = new Map(docs.map((d) => [d._id, d]));
  return mine.flatMap((m) => {
    const doc = byId.get(m.projectId);
    return doc ? [{ ...projectView(doc), role: m.role }] : [];
  });
}

/** The caller's role in the project; a project the caller is not in does not exist for them. */
export async function requireMember(p: Platform, projectId: string, userId: string, role?: 'ADMIN'): Promise<Role> {
  const membership = await roleIn(p, projectId, userId);
  if (!membership) throw new AppError('NOT_FOUND', 'Project not found');
  if (role === 'ADMIN' && membership !== 'ADMIN') {
    throw new AppError('FORBIDDEN', 'Only an admin of the project can do this');
  }
  return membership;
}

/** The user's role in the project, or null when they are not a member. */
export async function roleIn(p: Platform, projectId: string, userId: string): Promise<Role | null> {
  const membership = await accounts(p.store).memberships.findOne({ _id: `${projectId}/${userId}` });
  return membership?.role ?? null;
}

export async function getProject(p: Platform, projectId: string, userId: string) {
  const role = await requireMember(p, projectId, userId);
  const doc = await accounts(p.store).projects.findOne({ _id: projectId });
  if (!doc) throw new AppError('NOT_FOUND', 'Project not found');
  return { ...projectView(doc), role };
}

export async function updateProject(p: Platform, projectId: string, userId: string, patch: { name?: string; language?: string; address?: string; footer?: boolean }) {
  await requireMember(p, projectId, userId, 'ADMIN');
  const doc = await accounts(p.store).projects.findOneAndUpdate({ _id: projectId }, { $set: patch });
  if (!doc) throw new AppError('NOT_FOUND', 'Project not found');
  return projectView(doc);
}

export async function rotateKeys(p: Platform, projectId: string, userId: string) {
  await requireMember(p, projectId, userId, 'ADMIN');
  const keys = issueKeys();
  const doc = await accounts(p.store).projects.findOneAndUpdate(
    { _id: projectId },
    { $set: { secretKeyHash: keys.secretKeyHash, publicKeyHash: keys.publicKeyHash } },
  );
  if (!doc) throw new AppError('NOT_FOUND', 'Project not found');
  return { ...projectView(doc), secretKey: keys.secretKey, publicKey: keys.publicKey };
}

export async function addMember(p: Platform, projectId: string, userId: string, email: string, role: Role) {
  await requireMember(p, projectId, userId, 'ADMIN');
  const { users, memberships } = accounts(p.store);
  const user = await users.findOne({ email });
  if (!user) {
    throw new AppError('NOT_FOUND', 'No user with this email', { suggestion: 'Ask them to sign up first.' });
  }
  const _id = `${projectId}/${user._id}`;
  if (role !== 'ADMIN') await keepAnAdmin(p, projectId, user._id);
  await memberships.updateOne(
    { _id },
    { $set: { role }, $setOnInsert: { projectId, userId: user._id, createdAt: nowIso() } },
    { upsert: true },
  );
  return { userId: user._id, email: user.email, role };
}

/** A project always keeps an admin: otherwise nobody could rotate its keys or add members again. */
async function keepAnAdmin(p: Platform, projectId: string, demotedUserId: string): Promise<void> {
  const admins = await accounts(p.store).memberships.find({ projectId, role: 'ADMIN' }, { projection: { userId: 1 } });
  if (admins.length === 1 && admins[0].userId === demotedUserId) {
    throw new AppError('CONFLICT', 'The last admin of a project cannot be demoted', {
      suggestion: 'Make another member an admin first.',
    });
  }
}

export async function listMembers(p: Platform, projectId: string, userId: string) {
  await requireMember(p, projectId, userId);
  const { users, memberships } = accounts(p.store);
  const members = await memberships.find({ projectId }, { sort: { createdAt: 1 } });
  const people = await users.find({ _id: { $in: members.map((m) => m.userId) } });
  const emailOf = new Map(people.map((u) => [u._id, u.email]));
  return members.map((m) => ({ userId: m.userId, email: emailOf.get(m.userId) ?? '', role: m.role }));
}

/** Resolves an API key to its project; `null` for an unknown or rotated key. */
export async function projectForKey(p: Platform, key: string): Promise<{ projectId: string; keyKind: 'secret' | 'public' } | null> {
  const { projects } = accounts(p.store);
  const hash = hashToken(key);
  const kind = key.startsWith('sk_') ? 'secret' : key.startsWith('pk_') ? 'public' : null;
  if (!kind) return null;
  const doc = await projects.findOne(kind === 'secret' ? { secretKeyHash: hash } : { publicKeyHash: hash }, { projection: { _id: 1 }, shared: true });
  return doc ? { projectId: doc._id, keyKind: kind } : null;
}

export async function projectLanguage(p: Platform, projectId: string): Promise<string> {
  const doc = await accounts(p.store).projects.findOne({ _id: projectId }, { projection: { language: 1 } });
  return doc?.language ?? 'en';
}

/**
 * What the footer of the project's marketing email needs. Read by the mailer for each email:
 * `projects` is a read-cached collection, so a campaign's emails ask the store once, not once each.
 */
export async function footerSettings(p: Pick<Platform, 'store'>, projectId: string): Promise<FooterSettings | null> {
  return accounts(p.store).projects.findOne({ _id: projectId }, { projection: { name: 1, language: 1, address: 1, footer: 1 }, shared: true });
}
