import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const scryptAsync = promisify(scrypt) as (password: string, salt: Buffer, keylen: number, options: object) => Promise<Buffer>;

// scrypt with N=2^15 costs ~100 ms and 32 MiB per guess: slow for an attacker, fine for a login.
const N = 32768;
const r = 8;
const p = 1;
const KEY_LENGTH = 32;
const MAX_MEMORY = 64 * 1024 * 1024;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, KEY_LENGTH, { N, r, p, maxmem: MAX_MEMORY });
  return ['scrypt', N, r, p, salt.toString('base64'), key.toString('base64')].join('$');
}

/**
 * A hash with the parameters of every real one that no password matches (its key is random):
 * signing in to an unknown address checks the password against it, so the answer takes as long
 * as a wrong password for a known one. Made once per process.
 */
export const NO_ACCOUNT_HASH = ['scrypt', N, r, p, randomBytes(16).toString('base64'), randomBytes(KEY_LENGTH).toString('base64')].join('$');

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, rr, pp, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64');
  const actual = await scryptAsync(password, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(rr),
    p: Number(pp),
    maxmem: MAX_MEMORY,
  });
  return timingSafeEqual(actual, expected);
}
