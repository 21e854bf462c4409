import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, type Instance } from '../harness/instance.ts';

/**
 * The api app serves the dashboard: its page to a browser's navigation on the app's own paths,
 * its hashed assets cached for good, and nothing else changes for API clients, who still get the
 * JSON envelope, the 404 one included.
 */
let instance: Instance;
const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

const get = (path: string, accept: string, method = 'GET') => fetch(`${instance.url}${path}`, { method, headers: { accept } });

beforeAll(async () => {
  instance = await startInstance();
});

afterAll(async () => {
  await instance?.dispose();
});

describe('the dashboard page', () => {
  it('GET / in a browser is the app, with headers that forbid inline scripts, framing and leaking its address', async () => {
    const res = await get('/', BROWSER);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await res.text();
    expect(html).toMatch(/<div id="root"><\/div>/);
    expect(html).toMatch(/<script type="module"[^>]* src="\/assets\/[\w-]+\.js"><\/script>/);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script: the CSP would block it
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/script-src 'self'(;|$)/);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("object-src 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('same-origin');
    expect(res.headers.get('cache-control')).toBe('no-cache');
  });

  it("a browser navigation to one of the app's pages is the app, the verification link's included", async () => {
    for (const path of ['/signin', '/signup', '/new-project', '/p/prj_1/settings', '/p/prj_1/contacts/ctc_1', '/auth/verify?token=ver_x']) {
      const res = await get(path, BROWSER);
      expect(res.status, path).toBe(200);
      expect(await res.text(), path).toMatch(/<div id="root">/);
      expect(res.headers.get('vary'), path).toMatch(/Accept/i);
    }
  });

  it('a JSON client on the same paths gets the API: the envelope, the 404 one for paths the API does not have', async () => {
    const verify = await get('/auth/verify?token=ver_x', 'application/json');
    expect(verify.status).toBe(404);
    expect(((await verify.json()) as any).error.message).toMatch(/Verification link is invalid/);
    for (const path of ['/', '/signin', '/p/prj_1/settings']) {
      for (const accept of ['application/json', '*/*']) {
        const res = await get(path, accept);
        expect(res.status, `${path} ${accept}`).toBe(404);
        expect(((await res.json()) as any).error.code, `${path} ${accept}`).toBe('NOT_FOUND');
      }
    }
  });

  it('any other method, or a path that is not a page of the app, is the 404 envelope even for a browser', async () => {
    for (const [method, path] of [['POST', '/'], ['DELETE', '/signin'], ['GET', '/no-such-page'], ['GET', '/assets/missing.js']]) {
      const res = await get(path, BROWSER, method);
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as any).error.code, `${method} ${path}`).toBe('NOT_FOUND');
    }
  });
});

describe('the dashboard assets', () => {
  it('every file the page loads is served with a year-long, immutable cache (the names are content hashes)', async () => {
    const html = await (await get('/', BROWSER)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((m) => m[1]);
    expect(assets.length).toBeGreaterThan(1);
    for (const asset of assets) {
      const res = await get(asset, '*/*');
      expect(res.status, asset).toBe(200);
      expect(res.headers.get('cache-control'), asset).toMatch(/max-age=31536000.*immutable|immutable.*max-age=31536000/);
      const type = { js: /javascript/, css: /text\/css/, svg: /image\/svg\+xml/ }[asset.split('.').pop()!];
      expect(res.headers.get('content-type'), asset).toMatch(type ?? /./);
    }
  });
});
