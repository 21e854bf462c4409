import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface RuntimeBinaries {
  daprd: string;
  placement: string;
  scheduler: string;
  ferretdb: string;
  redisServer: string;
  /** PostgreSQL's bin directory (initdb, postgres, pg_isready). */
  postgresBin: string;
}

const ENSURE = fileURLToPath(new URL('../runtime/ensure.sh', import.meta.url));
const PATHS = fileURLToPath(new URL('../runtime/paths.sh', import.meta.url));

/**
 * The Dapr, FerretDB, Redis and PostgreSQL binaries, built or installed by scripts/runtime/ensure.sh into
 * ~/.cache/mailroom on first use and reused after.
 */
export function runtimeBinaries(): RuntimeBinaries {
  const given = ['MAILROOM_DAPRD', 'MAILROOM_PLACEMENT', 'MAILROOM_SCHEDULER', 'MAILROOM_FERRETDB', 'MAILROOM_REDIS_SERVER', 'MAILROOM_POSTGRES_BIN'];
  // Binaries named in the environment are used as they are; otherwise build or reuse the cache.
  const env = given.every((k) => process.env[k]) ? process.env : cachedBinaries();
  const binaries = {
    daprd: env.MAILROOM_DAPRD!,
    placement: env.MAILROOM_PLACEMENT!,
    scheduler: env.MAILROOM_SCHEDULER!,
    ferretdb: env.MAILROOM_FERRETDB!,
    redisServer: env.MAILROOM_REDIS_SERVER!,
    postgresBin: env.MAILROOM_POSTGRES_BIN!,
  };
  for (const [name, path] of Object.entries(binaries)) {
    if (!path || !existsSync(path)) throw new Error(`${name} not found (${path}); run scripts/runtime/ensure.sh`);
  }
  return binaries;
}

function cachedBinaries(): Record<string, string> {
  execFileSync('bash', [ENSURE], { stdio: ['ignore', 'inherit', 'inherit'] });
  const out = execFileSync('bash', ['-c', `source "${PATHS}" && env`], { encoding: 'utf8' });
  return Object.fromEntries(out.split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]));
}
