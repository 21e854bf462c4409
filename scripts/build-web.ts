/**
 * Builds the dashboard (web/) into web/dist with Vite. `--if-stale` builds only when web/dist is
 * missing or older than a source of the app (web/, and the shared schemas under domain/ it
 * imports): `npm start` runs it so a fresh clone or a pulled change serves the current app, and
 * `npm install` (the `prepare` script) builds once. The build goes to a temporary directory that
 * replaces web/dist in one rename, so a server never serves half a build.
 */
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const WEB = join(ROOT, 'web');
const DIST = join(WEB, 'dist');
/** What the bundle is made of: the app and the shared files it imports from domain/ (and the workflow step and status lists of actors/). */
const SOURCES = [join(WEB, 'src'), join(WEB, 'index.html'), join(WEB, 'vite.config.ts'), join(ROOT, 'domain'), join(ROOT, 'actors'), join(ROOT, 'package-lock.json')];

async function newest(path: string): Promise<number> {
  const info = await stat(path).catch(() => null);
  if (!info) return 0;
  if (!info.isDirectory()) return info.mtimeMs;
  let latest = info.mtimeMs;
  for (const entry of await readdir(path)) latest = Math.max(latest, await newest(join(path, entry)));
  return latest;
}

/** Whether web/dist is missing or older than its sources. */
export async function webIsStale(): Promise<boolean> {
  const built = await stat(join(DIST, 'index.html')).catch(() => null);
  if (!built) return true;
  const sources = await Promise.all(SOURCES.map(newest));
  return Math.max(...sources) > built.mtimeMs;
}

export async function buildWeb(): Promise<void> {
  const { build } = await import('vite');
  // Unique per build: two builds at once (two vitest projects' setups) never share a directory.
  const stamp = `${process.pid}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  const out = join(WEB, `.dist-${stamp}`);
  // Vite takes the mode from NODE_ENV when set (vitest sets `test`): the app is always the production build.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ configFile: join(WEB, 'vite.config.ts'), mode: 'production', logLevel: 'warn', build: { outDir: out } });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
  const old = join(WEB, `.dist-old-${stamp}`);
  await rename(DIST, old).catch(() => {});
  await rename(out, DIST);
  await rm(old, { recursive: true, force: true });
}

/** Builds when stale; true when it built. */
export async function ensureWebBuilt(): Promise<boolean> {
  if (!(await webIsStale())) return false;
  await buildWeb();
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const ifStale = process.argv.includes('--if-stale');
  const started = Date.now();
  const built = ifStale ? await ensureWebBuilt() : (await buildWeb(), true);
  console.log(built ? `dashboard built into web/dist in ${((Date.now() - started) / 1000).toFixed(1)} s` : 'dashboard: web/dist is up to date');
}
