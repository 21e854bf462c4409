// What a browser downloads for a first visit to one route of the dashboard: the entry chunk of
// web/dist/index.html, the route's lazy chunk, and every chunk either imports statically,
// read from Vite's manifest, each with its gzip size (what a server compressing at level 9 sends).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { WEB_DIST } from '../apps/api/http/dashboard.ts';

interface ManifestChunk {
  file: string;
  src?: string;
  isEntry?: boolean;
  imports?: string[];
  css?: string[];
}

export interface LoadedFile {
  file: string;
  bytes: number;
  gzipBytes: number;
}

export interface RouteLoad {
  files: LoadedFile[];
  jsGzipBytes: number;
  jsBytes: number;
  cssGzipBytes: number;
}

/** The files a first load of the route whose lazy screen is `screenSource` (e.g. `src/screens/signin/SignIn.tsx`) fetches. */
export function firstLoadOf(screenSource: string, dist = WEB_DIST): RouteLoad {
  const manifest = JSON.parse(readFileSync(join(dist, '.vite', 'manifest.json'), 'utf8')) as Record<string, ManifestChunk>;
  if (!manifest['index.html']) throw new Error('web/dist/.vite/manifest.json has no index.html entry');
  if (!manifest[screenSource]) throw new Error(`no chunk for ${screenSource} in the manifest: is it still a lazy screen?`);
  const keys = new Set<string>();
  const visit = (key: string) => {
    if (keys.has(key)) return;
    keys.add(key);
    for (const imported of manifest[key]?.imports ?? []) visit(imported);
  };
  visit('index.html');
  visit(screenSource);
  const files = new Set<string>();
  for (const key of keys) {
    files.add(manifest[key].file);
    for (const css of manifest[key].css ?? []) files.add(css);
  }
  const loaded = [...files].sort().map((file) => {
    const content = readFileSync(join(dist, file));
    return { file, bytes: content.length, gzipBytes: gzipSync(content, { level: 9 }).length };
  });
  const js = loaded.filter((f) => f.file.endsWith('.js'));
  return {
    files: loaded,
    jsBytes: js.reduce((sum, f) => sum + f.bytes, 0),
    jsGzipBytes: js.reduce((sum, f) => sum + f.gzipBytes, 0),
    cssGzipBytes: loaded.filter((f) => f.file.endsWith('.css')).reduce((sum, f) => sum + f.gzipBytes, 0),
  };
}

export const SIGN_IN_SCREEN = 'src/screens/signin/SignIn.tsx';
/** Issue #16: the sign-in route's first load stays under 300 KB of compressed JavaScript. */
export const SIGN_IN_BUDGET_BYTES = 300 * 1024;
