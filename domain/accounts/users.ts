import { DuplicateKeyError } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { AppError } from '../errors.ts';
import { hashToken, newId, newToken, nowIso } from '../ids.ts';
import { enqueueSystemEmail } from '../mail/outbound.ts';
import { accounts, type UserDoc } from './collections.ts';
import { hashPassword, verifyPassword } from './passwords.ts';

const SESSION_DAYS = 30;
const VERIFICATION_DAYS = 7;
const DAY_MS = 86_400_000;

export interface PublicUser {
  id: string;
  email: string;
  emailVerified: boolean;
}

export const publicUser = (u: UserDoc): PublicUser => ({ id: u._id, email: u.email, emailVerified: u.emailVerified });

export async function signup(p: Platform, email: string, password: string) {
  const { users } = accounts(p.store);
  const user: UserDoc = {
    _id: newId(),
    email,
    passwordHash: await hashPassword(password),
    emailVerified: false,
    createdAt: nowIso(),
  };
  try {
    await users.insertOne(user);
  } catch (err) {
    if (err instanceof DuplicateKeyError) throw new AppError('CONFLICT', 'An account with this email already exists');
    throw err;
  }
  await sendVerification(p, user);
  return { user: publicUser(user), token: await openSession(p, user._id) };
}

export async function sendVerification(p: Platform, user: UserDoc): Promise<void> {
  const token = newToken('ver_');
  const now = Date.now();
  await accounts(p.store).verifications.insertOne({
    _id: hashToken(token),
    userId: user._id,
    createdAt: new Date(now).toISOString(),
    expiresAt: new Date(now + VERIFICATION_DAYS * DAY_MS).toISOString(),
  });
  const link = `${p.config.publicUrl}/auth/verify?token=${encodeURIComponent(token)}`;
  await enqueueSystemEmail(p, {
    to: user.email,
    subject: 'Verify your email address',
    html: `<p>Welcome! Confirm your email address by opening this link:</p><p><a href="${link}">${link}</a></p>`,
    text: `Welcome! Confirm your email address by opening this link:\n\n${link}\n`,
  });
  p.log.info({ userId: user._id }, 'verification email queued');
}

export async function verifyEmail(p: Platform, token: string): Promise<PublicUser> {
  const { verifications, users } = accounts(p.store);
  const record = await verifications.findOne({ _id: hashToken(token) });
  if (!record || record.expiresAt < nowIso()) {
    throw new AppError('NOT_FOUND', 'Verification link is invalid or has expired', {
      suggestion: 'Sign in and ask for a new verification email.',
    });
  }
  const user = await users.findOneAndUpdate({ _id: record.userId }, { $set: { emailVerified: true } });
  await verifications.deleteOne({ _id: record._id });
  if (!user) throw new AppError('NOT_FOUND', 'User not found');
  return publicUser(user);
}

export async function login(p: Platform, email: string, password: string) {
  const user = await accounts(p.store).users.findOne({ email });
  // The same answer for an unknown email and a wrong password: no account probing.
  if (!user || !(await verifyPassword(password, user.passwordHash))) {
    throw new AppError('UNAUTHORIZED', 'Invalid email or password');
  }
  return { token: await openSession(p, user._id), user: publicUser(user) };
}

async function openSession(p: Platform, userId: string): Promise<string> {
  const token = newToken('sess_');
  const now = Date.now();
  await accounts(p.store).sessions.insertOne({
    _id: hashToken(token),
    userId,
    createdAt: new Date(now).toISOString(),
    expiresAt: new Date(now + SESSION_DAYS * DAY_MS).toISOString(),
  });
  return token;
}

export async function logout(p: Platform, token: string): Promise<void> {
  await accounts(p.store).sessions.deleteOne({ _id: hashToken(token) });
}

export async function userForSession(p: Platform, token: string): Promise<UserDoc | null> {
  const { sessions, users } = accounts(p.store);
  const session = await sessions.findOne({ _id: hashToken(token) });
  if (!session || session.expiresAt < nowIso()) return null;
  return users.findOne({ _id: session.userId });
}

/**
 * Another verification email, at most one per VERIFICATION_RESEND_SECONDS (a 429 with
 * Retry-After before that): the endpoint must not be a way to flood an address. The links sent
 * before stop working, so only the newest one verifies.
 */
export async function resendVerification(p: Platform, userId: string): Promise<void> {
  const { users, verifications } = accounts(p.store);
  const user = await users.findOne({ _id: userId });
  if (!user) throw new AppError('NOT_FOUND', 'User not found');
  if (user.emailVerified) throw new AppError('CONFLICT', 'Email address is already verified');
  const earlier = await verifications.find({ userId }, { projection: { createdAt: 1 } });
  const last = Math.max(0, ...earlier.map((v) => Date.parse(v.createdAt ?? '') || 0));
  const wait = last + p.config.verificationResendSeconds * 1000 - Date.now();
  if (wait > 0) {
    throw new AppError('RATE_LIMIT_EXCEEDED', 'A verification email was sent moments ago', {
      retryAfter: Math.ceil(wait / 1000),
      suggestion: 'Look for that email (and in the spam folder) before asking for another.',
    });
  }
  await verifications.deleteMany({ userId });
  await sendVerification(p, user);
}
