import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { indexFerretIds } from './ferretdb-id-index.ts';
import { waitForTcp, type ProcessSpec } from './processes.ts';

const run = promisify(execFile);

/**
 * PostgreSQL for FerretDB in the distributed stack: a cluster of its own in `dataDir`, made by
 * initdb on first start (trust authentication, loopback TCP only, no Unix socket) and run with
 * PostgreSQL's durable defaults (fsync, synchronous commit), so a crash of any process keeps what
 * FerretDB acknowledged. PostgreSQL refuses to run as root: as root it runs in a user namespace
 * where it is an ordinary user (its files stay root's on the host, so a test's directory is
 * removed as usual and no parent directory needs opening up). Ready once it accepts connections
 * and indexes FerretDB's ids (ferretdb-id-index.ts).
 */
export async function postgresSpec(binDir: string, dataDir: string, port: number): Promise<ProcessSpec & { url: string }> {
  const [command, ...prefix] = [...asNonRoot(), join(binDir, 'postgres')];
  if (!existsSync(join(dataDir, 'PG_VERSION'))) {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    // --no-sync: an empty cluster need not reach the disk before the server starts.
    const [initdb, ...initPrefix] = [...asNonRoot(), join(binDir, 'initdb')];
    await run(initdb, [...initPrefix, '-D', dataDir, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--no-locale']);
  }
  return {
    name: 'postgres',
    command,
    // Warnings and errors only: PostgreSQL logs every start, checkpoint and shutdown otherwise.
    args: [...prefix, '-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'log_min_messages=warning',
      // FerretDB's statements name the field as a parameter (`_jsonb->$1 @> $2`): only a plan made
      // for the values can use an index (ferretdb-id-index.ts), and PostgreSQL would switch a
      // statement run five times to a generic plan, a table scan.
      '-c', 'plan_cache_mode=force_custom_plan'],
    ready: async () => {
      await waitForPostgres(binDir, port);
      await indexFerretIds(binDir, port);
    },
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
  };
}

/** A command prefix that runs a program as a non-root user when this process is root (see above). */
function asNonRoot(): string[] {
  return process.getuid?.() === 0 ? ['unshare', '--user', '--map-user=1000', '--map-group=1000'] : [];
}

/** Until the server accepts connections (it listens before its recovery after a crash ends). */
async function waitForPostgres(binDir: string, port: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await run(join(binDir, 'pg_isready'), ['-q', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-t', '1']);
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`PostgreSQL on port ${port} not ready after ${timeoutMs} ms: ${(err as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** FerretDB serving the MongoDB wire protocol on `port`, over the PostgreSQL at `postgresUrl`. */
export function ferretdbSpec(binary: string, port: number, postgresUrl: string): ProcessSpec {
  return {
    name: 'ferretdb',
    command: binary,
    args: ['--listen', `127.0.0.1:${port}`, '--postgresql-url', postgresUrl, '--log-level', 'error'],
    ready: () => waitForTcp(port),
  };
}
