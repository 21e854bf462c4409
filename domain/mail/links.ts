import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';
import { DuplicateKeyError, type DocumentStore } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';

/**
 * Signed links put in emails: the open pixel, rewritten links, and the subscription pages.
 * A token is `<id>.<mac>`; the MAC (HMAC-SHA256, 128 bits) binds the id to its purpose (and, for
 * clicks, to the target URL), so links cannot be forged or turned into an open redirect.
 * The key is LINK_SECRET when set, otherwise one generated once and kept in the store, so every
 * replica and every restart signs alike.
 */
export type LinkPurpose = 'open' | 'click' | 'contact' | 'bounce';

/**
 * A KeyObject, made once: Node 24 spends some 8 µs checking a Buffer key on each HMAC (a tenth of
 * a campaign email's CPU went there, several links per email), a KeyObject about none.
 */
export type LinkKey = KeyObject | Buffer;

const keys = new WeakMap<DocumentStore, Promise<KeyObject>>();
let secretKey: { secret: string; key: KeyObject } | undefined;

export function linkKey(p: Platform): Promise<KeyObject> {
  const secret = process.env.LINK_SECRET;
  if (secret) {
    if (secretKey?.secret !== secret) secretKey = { secret, key: createSecretKey(Buffer.from(secret)) };
    return Promise.resolve(secretKey.key);
  }
  let key = keys.get(p.store);
  if (!key) {
    key = loadOrCreateKey(p.store);
    keys.set(p.store, key);
  }
  return key;
}

async function loadOrCreateKey(store: DocumentStore): Promise<KeyObject> {
  const settings = store.collection<{ _id: string; value: string }>('settings');
  const key = (value: string) => createSecretKey(Buffer.from(value, 'base64'));
  const existing = await settings.findOne({ _id: 'link-secret' });
  if (existing) return key(existing.value);
  const value = randomBytes(32).toString('base64');
  try {
    await settings.insertOne({ _id: 'link-secret', value });
    return key(value);
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    const winner = await settings.findOne({ _id: 'link-secret' });
    return key(winner!.value);
  }
}

const digest = (key: LinkKey, purpose: LinkPurpose, id: string, extra = '') =>
  createHmac('sha256', key).update(`${purpose}\u0000${id}\u0000${extra}`).digest();

const mac = (key: LinkKey, purpose: LinkPurpose, id: string, extra = '') => digest(key, purpose, id, extra).subarray(0, 16).toString('base64url');

/**
 * A MAC for an email address's local part (the Return-Path): 80 bits in lower-case hex, since
 * mail systems may fold an address to one case, and it must fit in 64 characters with its id.
 */
export const addressMac = (key: LinkKey, purpose: LinkPurpose, id: string) => digest(key, purpose, id).subarray(0, 10).toString('hex');

export const signToken = (key: LinkKey, purpose: LinkPurpose, id: string, extra?: string) => `${id}.${mac(key, purpose, id, extra)}`;

/** The id a token carries, or null when the token was not made by us for this purpose. */
export function verifyToken(key: LinkKey, purpose: LinkPurpose, token: string, extra?: string): string | null {
  const dot = token.lastIndexOf('.');
  if (dot <= 0) return null;
  const id = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(mac(key, purpose, id, extra));
  return given.length === expected.length && timingSafeEqual(given, expected) ? id : null;
}

/** The links of one email to one contact. */
export function emailLinks(publicUrl: string, key: LinkKey, emailId: string, contactId: string) {
  const contact = signToken(key, 'contact', contactId);
  return {
    unsubscribeUrl: `${publicUrl}/unsubscribe/${contact}`,
    subscribeUrl: `${publicUrl}/subscribe/${contact}`,
    manageUrl: `${publicUrl}/manage/${contact}`,
    openPixelUrl: `${publicUrl}/t/open/${signToken(key, 'open', emailId)}`,
    clickUrl: (url: string) => `${publicUrl}/t/click/${signToken(key, 'click', emailId, url)}?u=${encodeURIComponent(url)}`,
  };
}
