import type { Logger } from 'pino';
import { boot, createLogger, type Running } from './boot.ts';
import { loadConfig } from './config.ts';
import { embeddedAdapters } from './embedded.ts';

/**
 * Starts a process in the role its entry point names. `MAILROOM_MODE=distributed` puts it behind
 * a Dapr sidecar (one role per process); the default, embedded, plays every role in one process.
 */
export async function main(role: 'api' | 'mailer'): Promise<Running> {
  const log = createLogger();
  const config = loadConfig();
  const distributed = process.env.MAILROOM_MODE === 'distributed';
  if (!distributed && role === 'mailer') throw new Error('the mailer runs on its own only in distributed mode (MAILROOM_MODE=distributed)');
  // Loaded only when used: the Dapr SDK (with gRPC) and the MongoDB and Redis clients cost the
  // embedded process some 70 MB of memory for nothing.
  const adapters = distributed
    ? await (await import('./distributed.ts')).distributedAdapters(config, log, role === 'api')
    : await embeddedAdapters(config, log);
  const roles = distributed ? { api: role === 'api', mailer: role === 'mailer' } : { api: true, mailer: true };
  const running = await boot(config, adapters, roles, log);

  closeOnSignals(() => running.close(), log);
  return running;
}

/**
 * How long a shutdown may take before the process exits anyway. Nothing is lost by it: what was
 * accepted is durable, and a restart resumes what was under way. (An app whose Dapr sidecar had
 * gone never finished closing, and ignored SIGTERM until it was killed.)
 */
export const SHUTDOWN_DEADLINE_MS = 10_000;

/**
 * SIGINT or SIGTERM closes the process and exits 0 (1 if closing failed); a close still running
 * after `deadlineMs` exits 1. A second signal changes nothing: Ctrl-C under `npm start` reaches
 * the process twice (from the terminal, and forwarded by npm).
 */
export function closeOnSignals(
  close: () => Promise<void>,
  log: Pick<Logger, 'info' | 'error'>,
  {
    deadlineMs = SHUTDOWN_DEADLINE_MS,
    on = (signal: NodeJS.Signals, listener: () => void): void => void process.on(signal, listener),
    exit = (code: number): void => process.exit(code),
  }: { deadlineMs?: number; on?: (signal: NodeJS.Signals, listener: () => void) => void; exit?: (code: number) => void } = {},
): void {
  let closing = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    on(signal, () => {
      if (closing) return;
      closing = true;
      log.info({ signal }, 'shutting down');
      const deadline = setTimeout(() => {
        log.error({ deadlineMs }, 'shutdown did not finish in time: exiting');
        exit(1);
      }, deadlineMs);
      close().then(
        () => {
          clearTimeout(deadline);
          exit(0);
        },
        (err) => {
          clearTimeout(deadline);
          log.error({ err }, 'shutdown failed');
          exit(1);
        },
      );
    });
  }
}
