import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach } from 'vitest';
import type { EmbeddedPubSub } from '../../adapters/embedded/pubsub.ts';
import { boot, type Running } from '../../runtime/boot.ts';
import { loadConfig } from '../../runtime/config.ts';
import { embeddedAdapters } from '../../runtime/embedded.ts';
import { eventually } from './client.ts';
import { startSmtpSink, type SmtpSink } from './smtp-sink.ts';

/**
 * The whole embedded platform (`boot`) in the test's process, for tests that write what a crash
 * leaves straight into its store and watch what the platform makes of it. One DATA_DIR per test,
 * kept across `stop()` and `start()` (a restart); after each test the platform and its SMTP sink
 * are closed and the directory deleted.
 */
export function bootedPlatform() {
  let running: Running | undefined;
  let sink: SmtpSink | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await running?.close();
    await sink?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
    running = sink = dir = undefined;
  });
  return {
    /** A real SMTP server for the mailer (`SMTP_URL`); without one, mail goes to the dev outbox. */
    async sink(): Promise<SmtpSink> {
      return (sink ??= await startSmtpSink());
    },
    /**
     * Starts the platform on this test's DATA_DIR: the API's roles (the start-up resume) and, unless
     * told, the mailer; `env`, more of its environment.
     */
    async start({ mailer = true, env = {} }: { mailer?: boolean; env?: Record<string, string> } = {}): Promise<Running> {
      dir ??= await mkdtemp(join(tmpdir(), 'mailroom-booted-'));
      const config = loadConfig({ ...env, DATA_DIR: dir, PORT: '0', INBOUND_SMTP_PORT: '0', ...(sink ? { SMTP_URL: sink.url } : {}) });
      const log = pino({ level: 'silent' });
      running = await boot(config, await embeddedAdapters(config, log), { api: true, mailer }, log);
      return running;
    },
    async stop(): Promise<void> {
      await running?.close();
      running = undefined;
    },
    /** Until no message waits in the queue or is being handled: what a check that nothing more comes waits for. */
    async untilIdle(): Promise<void> {
      if (!running) throw new Error('the platform is not running');
      const pubsub = running.platform.pubsub as EmbeddedPubSub;
      await eventually(async () => (pubsub.pending === 0 && pubsub.inFlight === 0 ? true : undefined), 10_000, 'the queues idle');
    },
    /** The DATA_DIR (after the first start). */
    get dir(): string {
      if (!dir) throw new Error('the platform was never started');
      return dir;
    },
  };
}
