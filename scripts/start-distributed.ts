// `npm run start:distributed`: the distributed deployment on this machine, without the Dapr CLI.
// The API answers on PORT (3000) as in embedded mode; Ctrl+C stops every process.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startStack } from './stack/stack.ts';

const port = Number(process.env.PORT ?? 3000);
const dir = process.env.DATA_DIR ? resolve(process.env.DATA_DIR, 'distributed') : await mkdtemp(join(tmpdir(), 'mailroom-stack-'));
const passOn = ['PUBLIC_URL', 'SMTP_URL', 'DNS_SERVERS', 'EMAIL_RATE_PER_SECOND', 'CAMPAIGN_BATCH_SIZE', 'API_RATE_PER_MINUTE', 'WEBHOOK_ALLOW_PRIVATE', 'SYSTEM_FROM'];
const env = Object.fromEntries(passOn.filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]));

// MAILER_REPLICAS: mailer apps, each behind its own sidecar, splitting email.outbound (README).
const mailerReplicas = Number(process.env.MAILER_REPLICAS ?? 1);
if (!Number.isInteger(mailerReplicas) || mailerReplicas < 1) {
  console.error(`MAILER_REPLICAS must be a whole number of at least 1, not ${JSON.stringify(process.env.MAILER_REPLICAS)}`);
  process.exit(1);
}

// Stopped while it starts (the API answers before the last mailer is up): exit at once, which
// kills what was started (the Supervisor's exit hook); a signal's default action would leave it.
const stopWhileStarting = () => process.exit(1);
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, stopWhileStarting);

console.log(`starting the distributed stack in ${dir} (logs in ${join(dir, 'logs')})`);
const stack = await startStack({
  port,
  dir,
  env,
  mongodbUrl: process.env.MONGODB_URL,
  mailerReplicas,
  logLevel: process.env.LOG_LEVEL === 'debug' ? 'debug' : 'warn',
});
console.log(`mailroom (distributed) is ready at ${stack.apiUrls[0]}`);
for (const [i, url] of stack.mailerUrls.entries()) console.log(`mailer ${i} serves /health and /metrics at ${url}`);

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.removeListener(signal, stopWhileStarting);
  process.once(signal, async () => {
    console.log('stopping…');
    await stack.stop();
    process.exit(0);
  });
}
