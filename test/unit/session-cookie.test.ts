import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clearSessionCookie, sessionCookie, setSessionCookie } from '../../apps/api/http/session-cookie.ts';

/** The session cookie's attributes follow PUBLIC_URL; the token is read from among other cookies. */
let server: ReturnType<express.Express['listen']>;
let base = '';

beforeAll(async () => {
  const app = express();
  app.get('/set', (req, res) => {
    setSessionCookie(res, 'sess_abc', String(req.query.publicUrl));
    res.end();
  });
  app.get('/clear', (req, res) => {
    clearSessionCookie(res, String(req.query.publicUrl));
    res.end();
  });
  app.get('/read', (req, res) => {
    res.json({ token: sessionCookie(req) ?? null });
  });
  server = app.listen(0);
  await new Promise((resolve) => server.once('listening', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => {
  server?.close();
});

const setCookieOf = async (path: string) => (await fetch(`${base}${path}`)).headers.getSetCookie()[0] ?? '';

describe('the session cookie', () => {
  it('is Secure when PUBLIC_URL is https, and not when it is http (a Secure cookie never comes back over http)', async () => {
    expect(await setCookieOf('/set?publicUrl=https://mail.example.com')).toMatch(/;\s*Secure/i);
    expect(await setCookieOf('/set?publicUrl=http://localhost:3000')).not.toMatch(/;\s*Secure/i);
  });

  it('is cleared with the attributes it was set with (a browser keeps a cookie cleared with others)', async () => {
    const cleared = await setCookieOf('/clear?publicUrl=https://mail.example.com');
    expect(cleared).toMatch(/^mailroom_session=;/);
    expect(cleared).toMatch(/;\s*Secure/i);
    expect(cleared).toMatch(/;\s*HttpOnly/i);
    expect(cleared).toMatch(/;\s*Path=\//i);
  });

  it('is read from among other cookies, by its exact name', async () => {
    const read = async (cookie: string) => ((await (await fetch(`${base}/read`, { headers: { cookie } })).json()) as { token: string | null }).token;
    expect(await read('theme=dark; mailroom_session=sess_abc; other=1')).toBe('sess_abc');
    expect(await read('xmailroom_session=sess_forged')).toBeNull();
    expect(await read('mailroom_session=')).toBeNull();
  });
});
