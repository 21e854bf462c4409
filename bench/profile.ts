// Summaries of `node --cpu-prof` profiles over a benchmark's measured window: what every
// profiled benchmark prints (self time by module and function, inclusive times), on which
// mail-harness.ts adds its buckets.
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { shortUrl } from './common.ts';

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** The samples of a profile within a window, and the tables every summary shows. */
export interface ProfileWindow {
  profile: CpuProfile;
  byId: Map<number, ProfileNode>;
  /** A node's parent by id. */
  parent: Map<number, number>;
  /** Samples in the window by the id of the node they were taken in. */
  hits: Map<number, number>;
  total: number;
  selfByFunction: Map<string, number>;
  selfByModule: Map<string, number>;
  /** Once per sample per module on its stack. */
  inclusiveByModule: Map<string, number>;
  /** Inclusive time of the repo's own functions (not node_modules), each counted once per stack. */
  inclusive: Map<string, number>;
  /** The `n` largest entries of a table, one `  12.3%  key` line each (share of `total`). */
  top(map: Map<string, number>, n: number): string;
}

export const NO_SAMPLES = '(no samples in the measured window)';

export const addTo = (map: Map<string, number>, key: string, n: number) => map.set(key, (map.get(key) ?? 0) + n);

/**
 * Reads a .cpuprofile and tallies its samples within a window (monotonic µs, the clock of
 * process.hrtime V8 stamps samples with, so start-up, warm-up and shutdown are left out);
 * undefined when no sample falls in it. Async hops (streams, promises, setImmediate) cut stacks,
 * so inclusive times are lower bounds.
 */
export function readProfileWindow(file: string, window: { startUs: number; endUs: number }): ProfileWindow | undefined {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const hits = new Map<number, number>();
  let at = profile.startTime;
  let total = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    at += profile.timeDeltas[i] ?? 0;
    if (at < window.startUs || at > window.endUs) continue;
    hits.set(profile.samples[i], (hits.get(profile.samples[i]) ?? 0) + 1);
    total++;
  }
  if (total === 0) return undefined;
  const selfByFunction = new Map<string, number>();
  const selfByModule = new Map<string, number>();
  const inclusiveByModule = new Map<string, number>();
  const inclusive = new Map<string, number>();
  for (const [id, n] of hits) {
    const node = byId.get(id)!;
    addTo(selfByFunction, frameLabel(node), n);
    addTo(selfByModule, moduleOf(node.callFrame.url, node.callFrame.functionName), n);
    const seenModules = new Set<string>();
    const seenFunctions = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)!;
      const { url, functionName } = frame.callFrame;
      if (functionName === '(root)') continue;
      const module = moduleOf(url, functionName);
      if (!seenModules.has(module)) {
        seenModules.add(module);
        addTo(inclusiveByModule, module, n);
      }
      if (!url.startsWith('file://') || url.includes('/node_modules/')) continue;
      const key = frameLabel(frame);
      if (!seenFunctions.has(key)) {
        seenFunctions.add(key);
        addTo(inclusive, key, n);
      }
    }
  }
  const top = (map: Map<string, number>, n: number) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([key, count]) => `  ${((100 * count) / total).toFixed(1).padStart(5)}%  ${key}`)
      .join('\n');
  return { profile, byId, parent, hits, total, selfByFunction, selfByModule, inclusiveByModule, inclusive, top };
}

/** A function as `name path:line`, the path relative to the repo. */
export function frameLabel(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const where = shortUrl(url);
  // Under tsx (Node 20, or a tree from before runtime/load-typescript.mjs) V8 runs transformed
  // code, so the line numbers of the repo's .ts files may not be theirs: none are shown.
  const line = /\.[cm]?ts$/.test(where) ? '' : `:${lineNumber + 1}`;
  return `${functionName || '(anonymous)'} ${where ? `${where}${line}` : ''}`.trim();
}

/** npm packages by name (nodemailer by its internal module), repo files by top two path parts. */
export function moduleOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node: internals';
  const path = shortUrl(url);
  const nodemailer = /node_modules\/nodemailer\/dist\/\w+\/([^/]+)/.exec(path);
  if (nodemailer) return `npm: nodemailer/${nodemailer[1]}`;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return `npm: ${pkg[1]}`;
  return path.split('/').slice(0, 2).join('/');
}

/** Prints the summary of each .cpuprofile in `dir` (`of`: whose profiles they are), or that there is none. */
export function printProfileDir(dir: string, of: string, summarize: (file: string) => string): void {
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')) : [];
  for (const file of files) console.log(`\nCPU profile of ${of}: ${join(dir, file)}\n${summarize(join(dir, file))}`);
  if (!files.length) console.log(`\nno CPU profile was written for ${of}`);
}
