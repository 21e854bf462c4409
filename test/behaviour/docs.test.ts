import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInstance, type Instance } from '../harness/instance.ts';

describe('GET /docs', () => {
  let instance: Instance;

  beforeAll(async () => {
    instance = await startInstance();
  });
  afterAll(() => instance.dispose());

  it('is an HTML page that renders /openapi.json with assets the instance serves itself', async () => {
    const page = await fetch(`${instance.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();

    // Nothing from another host: the page has to work offline.
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(refs.length).toBeGreaterThanOrEqual(3);
    for (const ref of refs) expect(ref).toMatch(/^\/(docs|openapi\.json)/);

    const loaded: Record<string, string> = {};
    for (const ref of refs) {
      const res = await fetch(`${instance.url}${ref}`);
      expect(res.status, ref).toBe(200);
      loaded[ref] = await res.text();
    }
    expect(loaded['/docs/assets/swagger-ui-bundle.js'].length).toBeGreaterThan(100_000);
    expect(loaded['/docs/assets/swagger-ui.css'].length).toBeGreaterThan(10_000);
    // The page's own script points the renderer at the document the API serves.
    expect(loaded['/docs/init.js']).toContain("url: '/openapi.json'");
    const openapi = (await (await fetch(`${instance.url}/openapi.json`)).json()) as { openapi: string };
    expect(openapi.openapi).toMatch(/^3\./);
  });

  it('serves only the renderer files, nothing else from the package', async () => {
    expect((await fetch(`${instance.url}/docs/assets/package.json`)).status).toBe(404);
    expect((await fetch(`${instance.url}/docs/assets/..%2Fpackage.json`)).status).toBe(404);
  });
});
