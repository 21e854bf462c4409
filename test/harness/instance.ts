import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { boot, type Running } from '../../runtime/boot.ts';
import { loadConfig } from '../../runtime/config.ts';
import { embeddedAdapters } from '../../runtime/embedded.ts';
import { ApiClient, eventually } from './client.ts';
import { startSmtpSink, type SmtpSink } from './smtp-sink.ts';

export interface Instance {
  url: string;
  api: ApiClient;
  smtp: SmtpSink;
  dataDir: string;
  env: Record<string, string>;
  /** Stops the platform (gracefully); the data directory stays for a restart. */
  stop(): Promise<void>;
  /** Starts the platform again on the same data and port. */
  restart(): Promise<void>;
  /** Stops everything and removes the data directory. */
  dispose(): Promise<void>;
}

export interface InstanceOptions {
  env?: Record<string, string>;
  /** Run the platform as a child process (`npm start`'s command) so a test can kill it. */
  process?: boolean;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts the platform the way `npm start` does, with a real SMTP sink as its relay and a fresh
 * data directory. In-process by default (fast); as a child process when a test kills it.
 */
export async function startInstance(options: InstanceOptions = {}): Promise<Instance> {
  const smtp = await startSmtpSink();
  const dataDir = await mkdtemp(join(tmpdir(), 'mailroom-test-'));
  const port = await freePort();
  const env: Record<string, string> = {
    PORT: String(port),
    DATA_DIR: dataDir,
    SMTP_URL: smtp.url,
    PUBLIC_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'silent',
    ...options.env,
  };
  const url = `http://127.0.0.1:${port}`;
  const runner = options.process ? processRunner(env, url) : inProcessRunner(env);
  await runner.start();

  return {
    url,
    api: new ApiClient(url),
    smtp,
    dataDir,
    env,
    stop: () => runner.stop(),
    restart: async () => {
      await runner.stop();
      await runner.start();
    },
    async dispose() {
      await runner.stop();
      await smtp.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

interface Runner {
  start(): Promise<void>;
  stop(): Promise<void>;
}

function inProcessRunner(env: Record<string, string>): Runner {
  let running: Running | undefined;
  return {
    async start() {
      const config = loadConfig({ ...process.env, ...env });
      running = await boot(config, await embeddedAdapters(config), { api: true, mailer: true }, pino({ level: 'silent' }));
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
      child = spawn(process.execPath, ['--import', 'tsx', 'apps/api/main.ts'], {
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
