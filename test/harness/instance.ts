import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { boot, type Running } from '../../runtime/boot.ts';
import { loadConfig } from '../../runtime/config.ts';
import { embeddedAdapters } from '../../runtime/embedded.ts';
import { createLogger } from '../../runtime/logging.ts';
import { typescriptArgs } from '../../runtime/node-typescript.ts';
import { freePort } from '../../scripts/stack/processes.ts';
import { startStack, type Stack } from '../../scripts/stack/stack.ts';
import { ApiClient, eventually, internalErrors } from './client.ts';
import { startDnsServer, type DnsServer } from './dns-server.ts';
import { startSmtpSink, type SmtpSink } from './smtp-sink.ts';

export interface Instance {
  url: string;
  api: ApiClient;
  smtp: SmtpSink;
  /** The DNS server the platform resolves through (`DNS_SERVERS`): publish records here. */
  dns: DnsServer;
  dataDir: string;
  env: Record<string, string>;
  /** The inbound SMTP listener's port (`INBOUND_SMTP_PORT`, its own per instance): bounce reports and inbound mail go there. */
  inboundPort: number;
  /**
   * What the platform logged so far, one entry per line, with the process that wrote it
   * (`embedded`; distributed: `api-0`, `mailer`, `daprd-api-0`, …). Empty unless started with `logs`.
   */
  logs(): Promise<{ process: string; line: string }[]>;
  /** Where the mailer serves /metrics: the API's URL in embedded mode, its own port in distributed mode. */
  readonly mailerUrl: string;
  /**
   * Stops the platform; its data stays for a restart. Child processes are SIGKILLed (a crash).
   * In distributed mode `apps` (the default) is every app and sidecar, while Redis, FerretDB,
   * PostgreSQL, placement and scheduler keep running, as a datastore outlives an app tier;
   * `everything` is every process of the stack at once (a machine's crash). In embedded mode
   * both are the one process.
   */
  stop(scope?: 'apps' | 'everything'): Promise<void>;
  /** Starts the platform again on the same data and port: whatever is down. */
  restart(): Promise<void>;
  /**
   * Distributed mode: SIGKILLs one process of the infrastructure (`redis`, `scheduler`,
   * `placement`, `ferretdb`, `postgres`) and starts it again on its data and port `downMs` later,
   * while the apps run on. Throws in embedded mode, which has none.
   */
  crashInfrastructure(name: InfrastructureProcess, downMs?: number): Promise<void>;
  /** Stops everything and removes the data directory. */
  dispose(): Promise<void>;
}

/**
 * `MAILROOM_TEST_MODE=distributed` runs every instance as the distributed deployment: Redis,
 * Dapr placement and scheduler, FerretDB, and the api and mailer apps behind real daprd sidecars.
 */
export const TEST_MODE = process.env.MAILROOM_TEST_MODE === 'distributed' ? 'distributed' : 'embedded';

/**
 * A value per mode: sizes and deadlines of workloads. FerretDB (SQLite) serializes writes and
 * scans on non-_id lookups, so a distributed test moves fewer rows and waits longer, with the
 * same assertions.
 */
export const byMode = <T>(values: { embedded: T; distributed: T }): T => values[TEST_MODE];

/**
 * How long a "nothing more arrives" check watches once the system looks idle, by mode: a
 * distributed hop (sidecar, pub/sub, a second process) takes longer than an embedded one, so a
 * fixed short wait there could pass before a wrong second delivery had time to show.
 */
export const QUIET_MS = byMode({ embedded: 1_000, distributed: 3_000 });

export type InfrastructureProcess = 'redis' | 'scheduler' | 'placement' | 'ferretdb' | 'postgres';

export interface InstanceOptions {
  env?: Record<string, string>;
  /**
   * Run the platform as a child process (`npm start`'s command) so a test can kill it.
   * Distributed instances always run as processes.
   */
  process?: boolean;
  /**
   * Keep the platform's log lines for `logs()`: at `LOG_LEVEL` (default info) through the
   * platform's own logger in-process; in distributed mode the apps log at that level too.
   */
  logs?: boolean;
  /** A login in SMTP_URL (`user:password`): the mailer then sends through nodemailer, which logs in (the sink's refuseLogins). */
  smtpLogin?: string;
}

/**
 * Starts the platform the way `npm start` does, with a real SMTP sink as its relay and a fresh
 * data directory. In-process by default (fast); as a child process when a test kills it.
 */
export async function startInstance(options: InstanceOptions = {}): Promise<Instance> {
  const smtp = await startSmtpSink();
  const dns = await startDnsServer();
  const dataDir = await mkdtemp(join(tmpdir(), 'mailroom-test-'));
  const port = await freePort();
  const inboundPort = await freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    INBOUND_SMTP_PORT: String(inboundPort),
    DATA_DIR: dataDir,
    SMTP_URL: options.smtpLogin ? smtp.url.replace('smtp://', `smtp://${options.smtpLogin}@`) : smtp.url,
    DNS_SERVERS: dns.address,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'silent',
    ...options.env,
  };
  const url = `http://127.0.0.1:${port}`;
  if (options.logs && options.process && TEST_MODE !== 'distributed') throw new Error('logs are kept for in-process and distributed instances only');
  const logLevel = options.logs ? (options.env?.LOG_LEVEL ?? 'info') : undefined;
  const lines: string[] = [];
  const runner =
    TEST_MODE === 'distributed'
      ? distributedRunner(env, dataDir, logLevel)
      : options.process
        ? processRunner(env, url)
        : inProcessRunner(env, logLevel ? createLogger({ level: logLevel, destination: collect(lines) }) : undefined);
  await runner.start();

  return {
    url,
    api: new ApiClient(url),
    smtp,
    dns,
    dataDir,
    env,
    inboundPort: Number(env.INBOUND_SMTP_PORT),
    async logs() {
      if (TEST_MODE !== 'distributed') return lines.flatMap((chunk) => chunk.split('\n').filter(Boolean)).map((line) => ({ process: 'embedded', line }));
      return distributedLogs(dataDir);
    },
    get mailerUrl() {
      return runner.mailerUrl?.() ?? url;
    },
    stop: (scope = 'apps') => runner.stop(scope),
    restart: async () => {
      await runner.stop('apps');
      await runner.start();
    },
    async crashInfrastructure(name, downMs = 0) {
      if (!runner.crashInfrastructure) throw new Error('embedded mode has no infrastructure processes');
      await runner.crashInfrastructure(name, downMs);
    },
    async dispose() {
      await runner.stop('apps');
      await runner.dispose?.();
      if (TEST_MODE === 'distributed' && internalErrors.size > 0) printInternalErrors(await distributedLogs(dataDir));
      await smtp.close();
      await dns.close();
      // KEEP_TEST_DATA=1 keeps the data and, in distributed mode, every process's logs.
      if (!process.env.KEEP_TEST_DATA) await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Every line each process of a distributed instance logged, by process. */
async function distributedLogs(dataDir: string): Promise<{ process: string; line: string }[]> {
  const dir = join(dataDir, 'logs');
  const out: { process: string; line: string }[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.log'))) {
    const text = await readFile(join(dir, file), 'utf8');
    for (const line of text.split('\n').filter(Boolean)) out.push({ process: file.slice(0, -'.log'.length), line });
  }
  return out;
}

/** What the platform logged about each 500 the tests got (internalErrors), on stderr. */
function printInternalErrors(logs: { process: string; line: string }[]): void {
  const ids = [...internalErrors];
  const lines = logs.filter(({ line }) => ids.some((id) => line.includes(id)));
  for (const { process: name, line } of lines.slice(0, 20)) console.error(`[500 in ${name}] ${line.slice(0, 4000)}`);
  for (const { line } of lines) for (const id of ids) if (line.includes(id)) internalErrors.delete(id);
}

interface Runner {
  start(): Promise<void>;
  stop(scope?: 'apps' | 'everything'): Promise<void>;
  crashInfrastructure?(name: InfrastructureProcess, downMs: number): Promise<void>;
  /** Releases what outlives stop() (the distributed infrastructure). */
  dispose?(): Promise<void>;
  /** The mailer's own URL when it runs as a separate app. */
  mailerUrl?(): string | undefined;
}

/** A pino destination that keeps what is written, chunk by chunk (a chunk is one or more lines). */
function collect(lines: string[]): Writable {
  return new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
}

function inProcessRunner(env: Record<string, string>, log = pino({ level: 'silent' })): Runner {
  let running: Running | undefined;
  return {
    async start() {
      const config = loadConfig({ ...process.env, ...env });
      running = await boot(config, await embeddedAdapters(config, log), { api: true, mailer: true }, log);
    },
    async stop() {
      await running?.close();
      running = undefined;
    },
  };
}

/** A child process that `stop()` kills with SIGKILL: a crash, not a shutdown. */
function processRunner(env: Record<string, string>, url: string): Runner {
  let child: ChildProcess | undefined;
  return {
    async start() {
      child = spawn(process.execPath, [...typescriptArgs, 'apps/api/main.ts'], {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      const started = child;
      await eventually(
        async () => {
          if (started.exitCode !== null) throw new Error(`platform exited with ${started.exitCode}`);
          const res = await fetch(`${url}/health`);
          return res.ok ? true : undefined;
        },
        30_000,
        'the platform to answer /health',
      );
    },
    async stop() {
      const victim = child;
      child = undefined;
      if (!victim || victim.exitCode !== null) return;
      const exited = new Promise((resolve) => victim.once('exit', resolve));
      victim.kill('SIGKILL');
      await exited;
    },
  };
}

function distributedRunner(env: Record<string, string>, dir: string, logLevel?: string): Runner {
  let stack: Stack | undefined;
  let appTier: string[] = [];
  return {
    async start() {
      if (!stack) {
        const { PORT, DATA_DIR: _dataDir, LOG_LEVEL: _logLevel, ...appEnv } = env;
        // The stack logs at warn by default; a test that reads the logs gets the apps' lines at its level.
        stack = await startStack({ port: Number(PORT), dir, env: logLevel ? { ...appEnv, LOG_LEVEL: logLevel } : appEnv });
        appTier = [...stack.names.apiSidecars, ...stack.names.api, stack.names.mailerSidecar, stack.names.mailer];
        return;
      }
      const { supervisor } = stack;
      const down = supervisor.names().filter((name) => !supervisor.isUp(name));
      // The infrastructure one by one in start order (FerretDB after PostgreSQL), then the app
      // tier all at once: each app waits for its sidecar, and the sidecar for its app's port.
      for (const name of down.filter((n) => !appTier.includes(n))) await supervisor.restart(name);
      await Promise.all(down.filter((n) => appTier.includes(n)).map((name) => supervisor.restart(name)));
    },
    async stop(scope = 'apps') {
      if (!stack) return;
      const names = scope === 'everything' ? stack.supervisor.names() : appTier;
      await Promise.all(names.map((name) => stack!.supervisor.kill(name)));
    },
    async crashInfrastructure(name, downMs) {
      await stack!.supervisor.kill(name);
      await new Promise((resolve) => setTimeout(resolve, downMs));
      await stack!.supervisor.restart(name);
    },
    async dispose() {
      await stack?.stop();
      stack = undefined;
    },
    mailerUrl: () => stack?.mailerUrl,
  };
}
