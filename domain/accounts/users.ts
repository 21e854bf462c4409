import { DuplicateKeyError } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { AppError } from '../errors.ts';
import { hashToken, newId, newToken, nowIso } from '../ids.ts';
import { enqueueSystemEmail } from '../mail/outbound.ts';
import { accounts, type UserDoc } from './collections.ts';
import { admitLoginAttempt, forgetFailedLogins } from './login-throttle.ts';
import { hashPassword, NO_ACCOUNT_HASH, verifyPassword } from './passwords.ts';

/** How long a session lasts (and the dashboard's session cookie with it). */
export const SESSION_DAYS = 30;
const VERIFICATION_DAYS = 7;
const DAY_MS = 86_400_000;
/** At most one "someone tried to sign up" email per address an hour: signup must not flood an inbox. */
const SIGNUP_NOTICE_WINDOW_MS = 3_600_000;

export interface PublicUser {
  id: string;
  email: string;
  emailVerified: boolean;
}

export const publicUser = (u: UserDoc): PublicUser => ({ id: u._id, email: u.email, emailVerified: u.emailVerified });

/**
 * A new account, or, when the address already has one, the same 201 answer (a fresh id and a
 * session-shaped token, neither stored, so nothing can be done with them) and an email to the
 * owner instead: the answer must not tell a stranger which addresses have accounts.
 */
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
    if (!(err instanceof DuplicateKeyError)) throw err;
    await noticeOfSignupAttempt(p, email);
    return { user: publicUser(user), token: newToken('sess_') };
  }
  await sendVerification(p, user);
  return { user: publicUser(user), token: await openSession(p, user._id) };
}

/** Tells the owner of `email` that someone tried to sign up with it (once an hour at most). */
async function noticeOfSignupAttempt(p: Platform, email: string): Promise<void> {
  const budget = await p.limiter.consume(`signup-notice:${hashToken(email)}`, 1, SIGNUP_NOTICE_WINDOW_MS);
  if (!budget.allowed) return;
  const docs = `${p.config.publicUrl}/docs`;
  const paragraphs = [
    'Someone just tried to create an account with this email address. It already has one, so nothing was created.',
    `If it was you: sign in with your existing password (POST /auth/login, described at ${docs}).`,
    'If it was not you: there is nothing to do. Your account and its password are unchanged.',
  ];
  await enqueueSystemEmail(p, {
    to: email,
    subject: 'Someone tried to sign up with your email address',
    html: paragraphs.map((text) => `<p>${text.replace(docs, `<a href="${docs}">${docs}</a>`)}</p>`).join(''),
    text: `${paragraphs.join('\n\n')}\n`,
  });
  p.log.info('signup attempt on an existing account: owner notified');
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

/**
 * A session for the right password. Every attempt passes the throttle first (429 when spent),
 * and an unknown address costs the same password check as a known one, against a hash no
 * password matches: the answer and its timing are the same whether or not the account exists.
 */
export async function login(p: Platform, email: string, password: string, clientIp: string) {
  await admitLoginAttempt(p, email, clientIp);
  const user = await accounts(p.store).users.findOne({ email });
  const matches = await verifyPassword(password, user?.passwordHash ?? NO_ACCOUNT_HASH);
  if (!user || !matches) throw new AppError('UNAUTHORIZED', 'Invalid email or password');
  await forgetFailedLogins(p, email, clientIp);
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
