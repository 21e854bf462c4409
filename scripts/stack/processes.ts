import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, Socket } from 'node:net';
import { join } from 'node:path';

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
  /** Resolves once the process serves; rejects on its own timeout. */
  ready: () => Promise<void>;
}

interface Running {
  spec: ProcessSpec;
  child: ChildProcess;
}

/**
 * Starts processes, sends their output to `<logDir>/<name>.log`, waits for each to be ready, and
 * stops them all (children first) on `stopAll()` or when this process exits. Each runs in a
 * process group of its own and is signalled as a group: a crash of PostgreSQL takes its backends
 * with it, as a machine's crash would (a killed postmaster alone leaves them holding its memory,
 * and it cannot start again until they notice).
 */
export class Supervisor {
  readonly logDir: string;
  readonly #running = new Map<string, Running>();
  readonly #onExit = () => this.killAllNow();

  constructor(logDir: string) {
    this.logDir = logDir;
    process.once('exit', this.#onExit);
  }

  async start(spec: ProcessSpec): Promise<void> {
    const log = createWriteStream(join(this.logDir, `${spec.name}.log`), { flags: 'a' });
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: { ...process.env, ...spec.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdout!.pipe(log);
    child.stderr!.pipe(log);
    this.#running.set(spec.name, { spec, child });
    const died = new Promise<never>((_, reject) =>
      child.once('exit', (code, signal) =>
        reject(new Error(`${spec.name} exited (${code ?? signal}) before it was ready; see ${join(this.logDir, `${spec.name}.log`)}`)),
      ),
    );
    died.catch(() => {});
    try {
      await Promise.race([spec.ready(), died]);
    } catch (err) {
      // The log's end says why; a caller that removes the directory (a benchmark) loses the file.
      throw new Error(`${spec.name}: ${(err as Error).message}\nlast lines of its log:\n${tailOf(join(this.logDir, `${spec.name}.log`))}`);
    }
  }

  /** SIGKILL: a crash, not a shutdown. */
  async kill(name: string): Promise<void> {
    await this.#signal(name, 'SIGKILL');
  }

  /** SIGTERM, and SIGKILL if it is still there after `graceMs`. */
  async stop(name: string, graceMs = 10_000): Promise<void> {
    await this.#signal(name, 'SIGTERM', graceMs);
  }

  /** Starts a stopped or killed process again with the same spec. */
  async restart(name: string): Promise<void> {
    const entry = this.#running.get(name);
    if (!entry) throw new Error(`unknown process ${name}`);
    if (entry.child.exitCode === null && entry.child.signalCode === null) await this.stop(name);
    await this.start(entry.spec);
  }

  /** Every process ever started, in start order. */
  names(): string[] {
    return [...this.#running.keys()];
  }

  /** Whether the process is running (not exited, not killed). */
  isUp(name: string): boolean {
    const child = this.#running.get(name)?.child;
    return !!child && child.exitCode === null && child.signalCode === null;
  }

  async stopAll(): Promise<void> {
    // Apps first, then sidecars, then infrastructure: the reverse of start order.
    for (const name of [...this.#running.keys()].reverse()) await this.stop(name, 5_000);
    process.removeListener('exit', this.#onExit);
  }

  killAllNow(): void {
    for (const { child } of this.#running.values()) {
      if (child.exitCode === null && child.signalCode === null) signalGroup(child, 'SIGKILL');
    }
  }

  async #signal(name: string, signal: NodeJS.Signals, graceMs = 0): Promise<void> {
    const entry = this.#running.get(name);
    if (!entry) throw new Error(`unknown process ${name}`);
    const { child } = entry;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    signalGroup(child, signal);
    if (graceMs > 0) {
      const timer = setTimeout(() => signalGroup(child, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    } else {
      await exited;
    }
  }
}

function tailOf(file: string, lines = 15): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Signals the child's whole process group (see Supervisor), or the child alone if the group is gone. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    child.kill(signal);
  }
}

/**
 * A port nothing listens on, below 32768: ports from the kernel's ephemeral range (32768-60999
 * here) can be taken by an outgoing connection between the check and the bind. A port stays
 * claimed by a lock file (with our pid) until this process exits, so concurrent test workers
 * and scripts never hand out the same port while its component has not bound it yet.
 */
export async function freePort(): Promise<number> {
  for (let tries = 0; tries < 500; tries++) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!claim(port)) continue;
    if (await canListen(port)) return port;
    release(port);
  }
  throw new Error('no free port between 20000 and 32000');
}

const LOCKS = join(tmpdir(), 'mailroom-ports');
const claimed = new Set<number>();

function claim(port: number): boolean {
  if (claimed.has(port)) return false;
  if (!swept) sweepStale();
  const file = join(LOCKS, String(port));
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch {
    if (ownerAlive(file)) return false;
    rmSync(file, { force: true }); // left by a process that is gone
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
    } catch {
      return false;
    }
  }
  if (claimed.size === 0) process.once('exit', releaseAll);
  claimed.add(port);
  return true;
}

let swept = false;

/**
 * Removes locks of processes that are gone and were taken long ago: a test worker ended by a
 * signal never runs its exit handler, so without this the folder would only grow.
 */
function sweepStale(): void {
  swept = true;
  mkdirSync(LOCKS, { recursive: true });
  const before = Date.now() - 10 * 60_000;
  for (const name of readdirSync(LOCKS)) {
    const file = join(LOCKS, name);
    try {
      if (statSync(file).mtimeMs < before && !ownerAlive(file)) rmSync(file, { force: true });
    } catch {
      // taken or removed meanwhile by another process
    }
  }
}

function ownerAlive(file: string): boolean {
  try {
    process.kill(Number(readFileSync(file, 'utf8')), 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function release(port: number): void {
  claimed.delete(port);
  rmSync(join(LOCKS, String(port)), { force: true });
}

function releaseAll(): void {
  for (const port of [...claimed]) release(port);
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    // All interfaces: some components bind their health ports there whatever they are told.
    server.listen(port, '0.0.0.0', () => server.close(() => resolve(true)));
  });
}

async function poll(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export const waitForTcp = (port: number, timeoutMs = 30_000) =>
  poll(`tcp port ${port}`, timeoutMs, () =>
    new Promise<boolean>((resolve) => {
      const socket = new Socket();
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
      socket.connect(port, '127.0.0.1');
    }),
  );

export const waitForHttp = (url: string, timeoutMs = 60_000) =>
  poll(url, timeoutMs, async () => {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await res.body?.cancel();
    return res.status >= 200 && res.status < 300;
  });
