import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { DuplicateKeyError, type DocumentStore } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';

/**
 * Signed links put in emails: the open pixel, rewritten links, and the subscription pages.
 * A token is `<id>.<mac>`; the MAC (HMAC-SHA256, 128 bits) binds the id to its purpose (and, for
 * clicks, to the target URL), so links cannot be forged or turned into an open redirect.
 * The key is LINK_SECRET when set, otherwise one generated once and kept in the store, so every
 * replica and every restart signs alike.
 */
export type LinkPurpose = 'open' | 'click' | 'contact';

const keys = new WeakMap<DocumentStore, Promise<Buffer>>();

export function linkKey(p: Platform): Promise<Buffer> {
  if (process.env.LINK_SECRET) return Promise.resolve(Buffer.from(process.env.LINK_SECRET));
  let key = keys.get(p.store);
  if (!key) {
    key = loadOrCreateKey(p.store);
    keys.set(p.store, key);
  }
  return key;
}

async function loadOrCreateKey(store: DocumentStore): Promise<Buffer> {
  const settings = store.collection<{ _id: string; value: string }>('settings');
  const existing = await settings.findOne({ _id: 'link-secret' });
  if (existing) return Buffer.from(existing.value, 'base64');
  const value = randomBytes(32).toString('base64');
  try {
    await settings.insertOne({ _id: 'link-secret', value });
    return Buffer.from(value, 'base64');
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    const winner = await settings.findOne({ _id: 'link-secret' });
    return Buffer.from(winner!.value, 'base64');
  }
}

const mac = (key: Buffer, purpose: LinkPurpose, id: string, extra = '') =>
  createHmac('sha256', key).update(`${purpose}\u0000${id}\u0000${extra}`).digest().subarray(0, 16).toString('base64url');

export const signToken = (key: Buffer, purpose: LinkPurpose, id: string, extra?: string) => `${id}.${mac(key, purpose, id, extra)}`;

/** The id a token carries, or null when the token was not made by us for this purpose. */
export function verifyToken(key: Buffer, purpose: LinkPurpose, token: string, extra?: string): string | null {
  const dot = token.lastIndexOf('.');
  if (dot <= 0) return null;
  const id = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1));
  const expected = Buffer.from(mac(key, purpose, id, extra));
  return given.length === expected.length && timingSafeEqual(given, expected) ? id : null;
}

/** The links of one email to one contact. */
export function emailLinks(publicUrl: string, key: Buffer, emailId: string, contactId: string) {
  const contact = signToken(key, 'contact', contactId);
  return {
    unsubscribeUrl: `${publicUrl}/unsubscribe/${contact}`,
    subscribeUrl: `${publicUrl}/subscribe/${contact}`,
    manageUrl: `${publicUrl}/manage/${contact}`,
    openPixelUrl: `${publicUrl}/t/open/${signToken(key, 'open', emailId)}`,
    clickUrl: (url: string) => `${publicUrl}/t/click/${signToken(key, 'click', emailId, url)}?u=${encodeURIComponent(url)}`,
  };
}
