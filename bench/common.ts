// What the benchmarks share: child processes and temp dirs that are cleaned up on every way
// out, readings of the machine (/proc) for CPU and memory, and the sections of the results files.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { DocumentStore } from '../ports/store.ts';
import { TYPESCRIPT_PRELOAD } from '../runtime/node-typescript.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLK_TCK = 100; // USER_HZ of /proc/<pid>/stat and /proc/stat on Linux

// ---- child processes and temp dirs, cleaned up on every way out ---------------------------------

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
const worktrees = new Set<string>();
const cleanups: (() => Promise<void>)[] = [];

/** Registers a child process, so cleanup stops it. */
export function adoptChild(child: ChildProcess): ChildProcess {
  children.add(child);
  return child;
}

/** Something else `cleanup` must release (a server run inside the benchmark's process). */
export function onCleanup(release: () => Promise<void>): void {
  cleanups.push(release);
}

/** A child process started by startChild, and what it printed. */
export interface Child {
  name: string;
  child: ChildProcess;
  pid: number;
  /** Lines it printed on stdout and stderr, and the last 20 of them. */
  logLines(): number;
  logTail(): string;
}

/**
 * The NODE_OPTIONS a tree's `npm start` gives the platform (package.json: its V8 heap limit), so
 * a benchmark runs the platform as `npm start` runs it; empty for a tree whose start sets none.
 */
export function startNodeOptions(root = ROOT): string {
  const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: { start?: string } }).scripts?.start ?? '';
  return /NODE_OPTIONS="([^"$]*)/.exec(start)?.[1]?.trim() ?? '';
}

/**
 * `node [--cpu-prof] --import <the tree's TypeScript preload> --import ./bench/orphan-guard.ts
 * <script>`, registered for cleanup, with an IPC channel unless `ipc: false`. The orphan guard
 * ends the child if this process dies without stopping it. `root` is the tree the script is run from (its directory is
 * the child's cwd): this one, or a `worktreeOf` another commit.
 */
export function startChild(name: string, script: string, env: NodeJS.ProcessEnv, profileDir?: string, { ipc = true, root = ROOT } = {}): Child {
  const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  const guard = pathToFileURL(join(ROOT, 'bench', 'orphan-guard.ts')).href; // this tree's guard, whatever the tree run
  const child = spawn(process.execPath, [...nodeArgs, '--import', typescriptPreload(root), '--import', guard, script], {
    cwd: root,
    env,
    stdio: ipc ? ['pipe', 'pipe', 'pipe', 'ipc'] : ['pipe', 'pipe', 'pipe'],
  });
  adoptChild(child);
  let lines = 0;
  let tail: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      lines++;
      tail.push(line);
      if (tail.length > 20) tail = tail.slice(-20);
    }
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  return { name, child, pid: child.pid!, logLines: () => lines, logTail: () => tail.join('\n') };
}

/**
 * How a tree runs its TypeScript: its own preload (runtime/load-typescript.mjs), or tsx for a
 * tree from before it, so a `--compare-ref` tree runs as it did then.
 */
function typescriptPreload(root: string): string {
  const preload = join(root, TYPESCRIPT_PRELOAD);
  return existsSync(preload) ? preload : 'tsx';
}

export async function stopChild(child: ChildProcess, graceMs = 15_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    children.delete(child);
    return;
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  // A graceful stop lets --cpu-prof write its profile; a process that hangs is killed.
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
  children.delete(child);
}

export async function cleanup(): Promise<void> {
  // Not `.map(stopChild)`: map's index would be the grace period, a SIGKILL 0-2 ms after the
  // SIGTERM (a distributed stack's launcher then died before stopping its Redis, apps and sidecars).
  await Promise.all([...children].map((child) => stopChild(child)));
  for (const release of cleanups.splice(0)) await release().catch(() => undefined);
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
  for (const dir of worktrees) removeWorktree(dir);
}

/**
 * Runs a benchmark's `main` and exits with its code: 1 when it throws (the error printed), after
 * `cleanup` either way.
 */
export async function runMain(main: () => Promise<number>): Promise<never> {
  let exitCode = 1;
  try {
    exitCode = await main();
  } catch (err) {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  } finally {
    await cleanup();
  }
  process.exit(exitCode);
}

// Last resort (an exception past the finally, process.exit elsewhere): nothing is left behind.
process.on('exit', () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  for (const dir of worktrees) removeWorktree(dir);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: stopping the child processes and removing temp dirs`);
    cleanup().finally(() => process.exit(130));
  });
}

export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

// ---- another commit's tree, next to this one -----------------------------------------------------

/** A checkout of another commit (`worktreeOf`): where it is and what it is. */
export interface Tree {
  /** Its root directory (a temp dir). */
  root: string;
  /** The ref as given, and the commit it named (short). */
  ref: string;
  commit: string;
  /** Which embedded store that commit has: SQLite (adapters/sqlite) or the journal store before it. */
  store: 'sqlite' | 'journal';
}

/** This tree, as a `Tree` (its commit as machineFacts reads it). */
export function currentTree(): Tree {
  return { root: ROOT, ref: 'HEAD', commit: machineFacts().commit, store: storeKind(ROOT) };
}

/**
 * A `git worktree` of `ref` (detached) in a temp dir, with this tree's node_modules linked into it
 * (or, where its package-lock.json differs from this tree's, its own installed by `npm ci`), so its
 * platform and store can run next to this tree's in the same benchmark run. Removed
 * (`git worktree remove --force`) by cleanup, on every way out.
 */
export async function worktreeOf(ref: string): Promise<Tree> {
  const git = (...gitArgs: string[]) => {
    const run = spawnSync('git', gitArgs, { cwd: ROOT, encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`git ${gitArgs.join(' ')} failed: ${run.stderr.trim()}`);
    return run.stdout.trim();
  };
  const commit = git('rev-parse', '--verify', '--short', `${ref}^{commit}`);
  const root = await mkdtemp(join(tmpdir(), 'mailroom-bench-tree-'));
  rmSync(root, { recursive: true, force: true }); // git worktree add wants to create it
  git('worktree', 'add', '--detach', '--quiet', root, commit);
  worktrees.add(root);
  if (readFileSync(join(root, 'package-lock.json'), 'utf8') === readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) {
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'));
  } else {
    console.error(`[compare] ${ref}'s dependencies are not this tree's: npm ci in its worktree`);
    const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
    if (install.status !== 0) throw new Error(`npm ci in the worktree of ${ref} failed (${install.status})`);
  }
  console.error(`[compare] ${ref} (${commit}) checked out in ${root}: ${storeKind(root) === 'sqlite' ? 'SQLite store' : 'journal store'}`);
  return { root, ref, commit, store: storeKind(root) };
}

function removeWorktree(root: string): void {
  spawnSync('git', ['worktree', 'remove', '--force', root], { cwd: ROOT });
  rmSync(root, { recursive: true, force: true });
  spawnSync('git', ['worktree', 'prune'], { cwd: ROOT });
  worktrees.delete(root);
}

const storeKind = (root: string): Tree['store'] => (existsSync(join(root, 'adapters', 'sqlite', 'store.ts')) ? 'sqlite' : 'journal');

/** How a results table names a tree's platform: "SQLite store" or "journal store @ 6055d3e". */
export function treeLabel(tree: Tree): string {
  const store = tree.store === 'sqlite' ? 'SQLite store' : 'journal store';
  return tree.root === ROOT ? store : `${store} @ ${tree.commit}`;
}

/**
 * Opens a tree's embedded store on `dataDir` as its runtime/embedded.ts does (the SQLite file
 * `mailroom.db`, or the journal store's `store/` directory), loaded from that tree's own code.
 * `journal` is passed to the journal store's open (e.g. its compaction threshold).
 */
export async function openTreeStore(tree: Tree, dataDir: string, journal: Record<string, unknown> = {}): Promise<DocumentStore> {
  const module = (path: string) => import(pathToFileURL(join(tree.root, path)).href);
  if (tree.store === 'sqlite') return (await module('adapters/sqlite/store.ts')).SqliteStore.open(join(dataDir, 'mailroom.db'));
  return (await module('adapters/embedded/store.ts')).EmbeddedStore.open(join(dataDir, 'store'), journal);
}

/** The project's own: a port below the ephemeral range, which outgoing connections can take. */
export { freePort } from '../scripts/stack/processes.ts';

/** Prints a benchmark's usage, the doc comment that opens its file (`import.meta.url`), and exits. */
export function printUsage(moduleUrl: string): never {
  console.log(readFileSync(fileURLToPath(moduleUrl), 'utf8').split('*/')[0]);
  process.exit(0);
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const monotonicUs = () => Number(process.hrtime.bigint() / 1000n);

// ---- readings of the machine ----------------------------------------------------------------------

/** The fields of a `/proc/…/stat` line after the command name, which is in parentheses and may contain spaces. */
const statFields = (stat: string): string[] => stat.slice(stat.lastIndexOf(')') + 2).split(' ');
/** The CPU seconds (utime + stime) in a stat line's fields: of a process, or of one of its threads. */
const statCpuSeconds = (fields: string[]): number => (Number(fields[11]) + Number(fields[12])) / CLK_TCK;

/** CPU seconds (user + system) a process has used; NaN once it is gone. */
export function processCpuSeconds(pid: number | 'self'): number {
  try {
    return statCpuSeconds(statFields(readFileSync(`/proc/${pid}/stat`, 'utf8')));
  } catch {
    return NaN;
  }
}

/** CPU seconds (user + system) of each thread of a process, by thread id, with its name (`comm`). */
export function threadCpuSeconds(pid: number): Map<string, { name: string; seconds: number }> {
  const threads = new Map<string, { name: string; seconds: number }>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads; // gone
  }
  for (const tid of tids) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      threads.set(tid, { name, seconds: statCpuSeconds(statFields(stat)) });
    } catch {
      // ended meanwhile
    }
  }
  return threads;
}

/**
 * The cores each kind of thread used between two readings of threadCpuSeconds, by thread name,
 * busiest first: `MainThread ×1 0.86, libuv-worker ×4 0.75, …` (Node names its threads: the event
 * loop, worker threads, libuv's pool, V8's helpers). A thread that ended in between is not counted.
 */
export function threadCores(before: ReturnType<typeof threadCpuSeconds>, after: ReturnType<typeof threadCpuSeconds>, seconds: number): string {
  const byName = new Map<string, { threads: number; seconds: number }>();
  for (const [tid, { name, seconds: cpu }] of after) {
    const kind = byName.get(name) ?? { threads: 0, seconds: 0 };
    kind.threads++;
    kind.seconds += cpu - (before.get(tid)?.seconds ?? 0);
    byName.set(name, kind);
  }
  return [...byName]
    .filter(([, kind]) => kind.seconds > 0)
    .sort((a, b) => b[1].seconds - a[1].seconds)
    .map(([name, kind]) => `${name} ×${kind.threads} ${(kind.seconds / seconds).toFixed(2)}`)
    .join(', ');
}

/** A process and every process under it (a PostgreSQL server and its backends, a whole stack). */
export function processTree(root: number): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(statFields(stat)[1]));
    } catch {
      // gone meanwhile
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parents) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

/** CPU seconds of a process tree: of the processes running, and of those they have reaped. */
export function treeCpuSeconds(root: number): number {
  let total = 0;
  for (const pid of processTree(root)) {
    try {
      const fields = statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'));
      total += statCpuSeconds(fields) + (Number(fields[13]) + Number(fields[14])) / CLK_TCK; // and cutime, cstime
    } catch {
      // gone meanwhile (its parent's cutime has it once reaped)
    }
  }
  return total;
}

/** CPU seconds the whole machine has been busy. */
export function machineBusySeconds(): number {
  const [, ...jiffies] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait.
  const [user, nice, system, , , irq, softirq, steal] = jiffies.map(Number);
  return (user + nice + system + irq + softirq + (steal ?? 0)) / CLK_TCK;
}

/**
 * Readers of a server's CPU seconds and memory: the process's own, or (`whole`) summed over every
 * process it started (`npm run start:distributed` and its stack).
 */
export function usageOf(pid: number, whole: boolean): { cpu(): number; memory(): { peakMiB: number; rssMiB: number } } {
  return {
    cpu: () => (whole ? treeCpuSeconds(pid) : processCpuSeconds(pid)),
    memory: () => (whole ? treeMemoryOf(pid) : memoryOf(pid)),
  };
}

/** memoryOf summed over a process tree (each process's own peak: the sum bounds the tree's peak from above). */
export function treeMemoryOf(root: number): { peakMiB: number; rssMiB: number } {
  let peakMiB = 0;
  let rssMiB = 0;
  for (const pid of processTree(root)) {
    try {
      const m = memoryOf(pid);
      peakMiB += m.peakMiB || 0; // a zombie has no VmHWM
      rssMiB += m.rssMiB || 0;
    } catch {
      // gone meanwhile
    }
  }
  return { peakMiB, rssMiB };
}

export function memoryOf(pid: number): { peakMiB: number; rssMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { peakMiB: kb('VmHWM') / 1024, rssMiB: kb('VmRSS') / 1024 };
}

export const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

export function machineFacts() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? cpus()[0]?.model ?? 'unknown';
  const nproc = spawnSync('nproc', { encoding: 'utf8' }).stdout.trim() || String(cpus().length);
  const git = (...gitArgs: string[]) => spawnSync('git', ['--no-optional-locks', ...gitArgs], { cwd: ROOT, encoding: 'utf8' }).stdout?.trim() ?? '';
  const commit = git('rev-parse', '--short', 'HEAD') || 'unknown';
  const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
  return { model, nproc, node: process.version, memGiB: totalmem() / 1024 ** 3, commit: dirty ? `${commit} + uncommitted changes` : commit };
}

/** How this benchmark was started, as a line a reader can run again. */
export function commandLine(benchmark: string): string {
  const argv = process.argv.slice(2).map(shellQuote).join(' ');
  return process.env.npm_lifecycle_event === `bench:${benchmark}`
    ? `npm run bench:${benchmark}${argv ? ` -- ${argv}` : ''}`
    : `node --import ./runtime/load-typescript.mjs bench/${benchmark}.ts${argv ? ` ${argv}` : ''}`;
}

export interface ResultsSection {
  startedAt: Date;
  facts: ReturnType<typeof machineFacts>;
  /** What ran: listed between the command and the machine. */
  config?: string[];
  /** The conditions it ran in: listed after the machine. */
  context?: string[];
  note?: string;
  /** The tables and their reading, as they are. */
  body: string[];
  /** bench/results/<file>.md when it is not the benchmark's own name (two benchmarks of one subject share a file). */
  file?: string;
}

/**
 * Appends a dated section to bench/results/<benchmark>.md (headed when the file is new): the
 * command, what ran, the machine and its conditions, then the benchmark's own tables.
 */
export function appendResults(benchmark: string, title: string, section: ResultsSection): void {
  const file = join(ROOT, 'bench', 'results', `${section.file ?? benchmark}.md`);
  mkdirSync(dirname(file), { recursive: true });
  if (!existsSync(file)) {
    writeFileSync(
      file,
      `# ${title}\n\nAppended by \`npm run bench:${benchmark}\` (bench/${benchmark}.ts); newest last. ` +
        'See bench/README.md for how to read them. Compare medians over several runs, never one run.\n',
    );
  }
  const { facts } = section;
  const item = (line: string) => `- ${line}`;
  const lines = [
    '',
    `## ${section.startedAt.toISOString().replace(/\.\d+Z$/, 'Z')}`,
    '',
    item(`command: \`${commandLine(benchmark)}\``),
    ...(section.config ?? []).map(item),
    item(`machine: ${facts.nproc} cores (nproc), ${facts.model}, ${facts.memGiB.toFixed(0)} GiB, node ${facts.node}; commit ${facts.commit}`),
    ...(section.context ?? []).map(item),
    ...(section.note ? [item(`note: ${section.note}`)] : []),
    '',
    ...section.body,
    '',
  ];
  appendFileSync(file, lines.join('\n'));
  console.error(`appended to ${relative(ROOT, file)}`);
}

/** A whole-number command-line option of at least `min`; anything else stops the benchmark, naming it. */
export function wholeOption(name: string, raw: string | undefined, min: number): number {
  const n = Number(raw);
  if (raw === undefined || raw.trim() === '' || !Number.isInteger(n) || n < min) throw new Error(`--${name} must be a whole number of at least ${min}, got "${raw}"`);
  return n;
}

/** `--modes`: a comma-separated list of the platform's modes. */
export function modesOption(raw: string): ('embedded' | 'distributed')[] {
  const modes = raw.split(',').map((mode) => mode.trim());
  if (!modes.every((mode) => mode === 'embedded' || mode === 'distributed')) throw new Error('--modes is a list of embedded, distributed');
  return modes as ('embedded' | 'distributed')[];
}

export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", `'\\''`)}'`;
}

/** The middle value, or the mean of the two middle ones. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

export function percentile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** A profile's script URL as a path relative to the repo. */
export function shortUrl(url: string): string {
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  return path.startsWith(ROOT) ? relative(ROOT, path) : path;
}
