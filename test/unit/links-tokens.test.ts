// The signed links put in emails (domain/mail/links.ts): what a token binds, what breaks it, the
// URL shapes the public pages answer, and where the signing key comes from.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { openStore } from '../harness/store.ts';
import { emailLinks, linkKey, signToken, verifyToken } from '../../domain/mail/links.ts';
import type { Platform } from '../../runtime/platform.ts';

const key = Buffer.from('unit-test-link-key');
const otherKey = Buffer.from('another-link-key');

describe('signToken / verifyToken', () => {
  it('gives back the id of a token made for the same purpose (and target)', () => {
    expect(verifyToken(key, 'open', signToken(key, 'open', 'email-1'))).toBe('email-1');
    expect(verifyToken(key, 'contact', signToken(key, 'contact', 'c-1'))).toBe('c-1');
    const url = 'https://shop.example/a?b=1&c=2';
    expect(verifyToken(key, 'click', signToken(key, 'click', 'email-1', url), url)).toBe('email-1');
  });

  it('keeps ids that contain dots (the MAC is after the last one)', () => {
    expect(verifyToken(key, 'contact', signToken(key, 'contact', 'a.b.c'))).toBe('a.b.c');
  });

  it('refuses a token of another purpose, another key, another target or another id', () => {
    const open = signToken(key, 'open', 'email-1');
    expect(verifyToken(key, 'click', open)).toBeNull();
    expect(verifyToken(key, 'contact', open)).toBeNull();
    expect(verifyToken(otherKey, 'open', open)).toBeNull();
    const click = signToken(key, 'click', 'email-1', 'https://a.example/');
    expect(verifyToken(key, 'click', click, 'https://b.example/')).toBeNull();
    expect(verifyToken(key, 'click', click, 'https://a.example')).toBeNull();
    expect(verifyToken(key, 'click', click)).toBeNull();
    const mac = open.slice(open.lastIndexOf('.') + 1);
    expect(verifyToken(key, 'open', `email-2.${mac}`)).toBeNull();
  });

  it('refuses malformed tokens without throwing', () => {
    const good = signToken(key, 'open', 'email-1');
    for (const bad of ['', '.', 'email-1', 'email-1.', `.${good.split('.')[1]}`, `${good}x`, good.slice(0, -1), `${good}.`, 'é.ü', `${good}\u0000`]) {
      expect(verifyToken(key, 'open', bad), JSON.stringify(bad)).toBeNull();
    }
  });

  it('makes URL-safe tokens with a 128-bit MAC', () => {
    const token = signToken(key, 'contact', '0190a0b1-0000-7000-8000-000000000000');
    const mac = token.slice(token.lastIndexOf('.') + 1);
    expect(mac).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(encodeURIComponent(token)).toBe(token);
  });
});

describe('emailLinks', () => {
  const links = emailLinks('https://mail.example/base', key, 'email-1', 'contact-1');

  it('puts the contact token in the subscription pages and the email token in the tracking URLs', () => {
    const contact = signToken(key, 'contact', 'contact-1');
    expect(links.unsubscribeUrl).toBe(`https://mail.example/base/unsubscribe/${contact}`);
    expect(links.subscribeUrl).toBe(`https://mail.example/base/subscribe/${contact}`);
    expect(links.manageUrl).toBe(`https://mail.example/base/manage/${contact}`);
    expect(links.openPixelUrl).toBe(`https://mail.example/base/t/open/${signToken(key, 'open', 'email-1')}`);
  });

  it('binds each click URL to its target, carried in `u`', () => {
    const target = 'https://shop.example/p?x=1&y=a b#frag';
    const click = new URL(links.clickUrl(target));
    expect(click.pathname.startsWith('/base/t/click/')).toBe(true);
    const u = click.searchParams.get('u')!;
    expect(u).toBe(target);
    const token = click.pathname.slice('/base/t/click/'.length);
    expect(verifyToken(key, 'click', token, u)).toBe('email-1');
    expect(verifyToken(key, 'click', token, 'https://evil.example/')).toBeNull();
  });
});

describe('linkKey', () => {
  const dirs: string[] = [];
  const stores: SqliteStore[] = [];
  afterEach(async () => {
    vi.unstubAllEnvs();
    await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
    await Promise.all(dirs.splice(0).map((d) => fs.promises.rm(d, { recursive: true, force: true })));
  });
  const open = async (dir?: string) => {
    const d = dir ?? (await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-links-')));
    if (!dir) dirs.push(d);
    const store = await openStore(d);
    stores.push(store);
    return { dir: d, platform: { store } as unknown as Platform };
  };

  it('is LINK_SECRET when set', async () => {
    vi.stubEnv('LINK_SECRET', 'from-the-environment');
    const { platform } = await open();
    expect((await linkKey(platform)).export().toString()).toBe('from-the-environment');
  });

  it('is otherwise generated once, kept in the store, and the same after a restart', async () => {
    vi.stubEnv('LINK_SECRET', '');
    const first = await open();
    const a = await linkKey(first.platform);
    expect(a.symmetricKeySize).toBe(32);
    expect((await linkKey(first.platform)).equals(a)).toBe(true);
    await stores.pop()!.close();
    const again = await open(first.dir);
    expect((await linkKey(again.platform)).equals(a)).toBe(true);
    const elsewhere = await open();
    expect((await linkKey(elsewhere.platform)).equals(a)).toBe(false);
  });
});
