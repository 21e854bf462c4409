import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it, vi } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { ensureAccountIndexes } from '../../domain/accounts/collections.ts';
import * as passwords from '../../domain/accounts/passwords.ts';
import { login, signup } from '../../domain/accounts/users.ts';
import { ensureEmailIndexes } from '../../domain/mail/outbound.ts';
import type { Platform } from '../../runtime/platform.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';

// The real scrypt check, watched: the rule is about the work done, not about clocks.
vi.mock('../../domain/accounts/passwords.ts', async (original) => {
  const actual = await original<typeof import('../../domain/accounts/passwords.ts')>();
  return { ...actual, verifyPassword: vi.fn(actual.verifyPassword) };
});
const verifyPassword = vi.mocked(passwords.verifyPassword);

let dir: string;
let store: SqliteStore;
let p: Platform;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mailroom-login-'));
  store = await openStore(dir);
  await ensureAccountIndexes(store);
  await ensureEmailIndexes(store);
  p = embeddedPlatform(store);
  verifyPassword.mockClear();
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

it('signing in to an unknown address checks the password against a hash as costly as a real one', async () => {
  await expect(login(p, 'nobody@example.com', 'a guess at it', '192.0.2.1')).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  expect(verifyPassword).toHaveBeenCalledTimes(1);
  expect(verifyPassword).toHaveBeenCalledWith('a guess at it', passwords.NO_ACCOUNT_HASH);

  // The stand-in hash has the scrypt parameters of every real one; only salt and key differ.
  const { user } = await signup(p, 'someone@example.com', 'correct horse battery');
  const real = (await store.collection<{ _id: string; passwordHash: string }>('users').findOne({ _id: user.id }))!.passwordHash;
  const params = (hash: string) => hash.split('$').slice(0, 4);
  expect(params(passwords.NO_ACCOUNT_HASH)).toEqual(params(real));
  expect(passwords.NO_ACCOUNT_HASH.split('$').map((part) => part.length)).toEqual(real.split('$').map((part) => part.length));
  await expect(login(p, 'someone@example.com', 'a wrong password', '192.0.2.1')).rejects.toMatchObject({ code: 'UNAUTHORIZED' });
  expect(verifyPassword).toHaveBeenCalledTimes(2);
});
