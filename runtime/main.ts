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

  let closing = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (closing) return;
      closing = true;
      log.info({ signal }, 'shutting down');
      running.close().then(
        () => process.exit(0),
        (err) => {
          log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
  return running;
}
