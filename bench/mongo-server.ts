/**
 * The MongoDB-wire server the distributed stack runs (FerretDB 1.24 on a PostgreSQL cluster of its
 * own, as scripts/stack/stack.ts starts them), started by a benchmark that needs to reach the data
 * itself (bulk inserts), with the CPU it uses.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { runtimeBinaries } from '../scripts/stack/binaries.ts';
import { postgresSpec } from '../scripts/stack/postgres.ts';
import { waitForTcp } from '../scripts/stack/processes.ts';
import { adoptChild, freePort, processCpuSeconds, stopChild, tempDir, treeCpuSeconds } from './common.ts';

export interface MongoServer {
  /** A `mongodb://` URL naming `database`. */
  url: string;
  /** CPU seconds of FerretDB and of PostgreSQL with its backends. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

export async function startMongoServer(database: string): Promise<MongoServer> {
  const dir = await tempDir('mailroom-bench-ferretdb-');
  const [pgPort, port] = [await freePort(), await freePort()];
  const bin = runtimeBinaries();
  const pg = await postgresSpec(bin.postgresBin, join(dir, 'postgres'), pgPort);
  const postgres = adoptChild(spawn(pg.command, pg.args, { stdio: ['ignore', 'ignore', 'inherit'] }));
  await pg.ready();
  const args = ['--listen', `127.0.0.1:${port}`, '--postgresql-url', pg.url, '--log-level', 'error'];
  const ferret = adoptChild(spawn(bin.ferretdb, args, { stdio: ['ignore', 'ignore', 'inherit'] }));
  await waitForTcp(port);
  return {
    url: `mongodb://127.0.0.1:${port}/${database}`,
    cpuSeconds: () => processCpuSeconds(ferret.pid!) + treeCpuSeconds(postgres.pid!),
    async stop() {
      await stopChild(ferret);
      await stopChild(postgres);
    },
  };
}
