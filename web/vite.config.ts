import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

/**
 * The dashboard's build: web/dist, assets with hashed names under /assets (the api app caches
 * them for a year) and a manifest the bundle-size check reads (which files the sign-in route loads).
 */
export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    manifest: true,
    // No inline module-preload polyfill: the CSP allows no inline script.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 800,
  },
  server: {
    // `npx vite web` in development: the API of `npm start` behind the same origin (cookies, CSRF).
    proxy: Object.fromEntries(
      ['/auth', '/projects', '/v1', '/contacts', '/events', '/segments', '/templates', '/campaigns', '/workflows', '/domains',
        '/suppressions', '/emails', '/webhooks', '/jobs'].map((path) => [path, { target: 'http://localhost:3000', bypass: htmlNavigation }]),
    ),
  },
});

/** A browser navigation to /auth/verify is the app's page; the app's fetch of it goes to the API. */
function htmlNavigation(req: { headers: Record<string, string | string[] | undefined> }): string | undefined {
  const accept = String(req.headers.accept ?? '');
  return accept.includes('text/html') ? '/index.html' : undefined;
}
