import { DEFAULT_CACHE_MB } from '../adapters/sqlite/cache-size.ts';
import { DEFAULT_SMTP_CONNECTIONS } from '../apps/mailer/connections.ts';

/** The environment of DESIGN.md's operational contract, read once at start-up. */
export interface Config {
  port: number;
  /** How long the HTTP server on PORT keeps an idle keep-alive connection open (seconds). */
  httpKeepAliveSeconds: number;
  publicUrl: string;
  dataDir: string;
  /** SQLite page cache of the embedded store, in MiB: the bound on its memory. */
  sqliteCacheMb: number;
  smtpUrl?: string;
  /** SMTP_CONNECTIONS: connections each mailer keeps open to the relay (apps/mailer/connections.ts). */
  smtpConnections: number;
  dnsServers: string[];
  emailRatePerSecond: number;
  apiRatePerMinute: number;
  webhookAllowPrivate: boolean;
  /** WEBHOOK step: how long one call may take, and how many calls a step makes before it fails. */
  webhookTimeoutMs: number;
  webhookAttempts: number;
  /** Event webhooks: the wait before a delivery's first retry (doubling after); not in the contract, for tests. */
  webhookRetrySeconds: number;
  redisUrl?: string;
  mongodbUrl?: string;
  /** Sender of the platform's own mail (account verification). Not in the contract; optional. */
  systemFrom: string;
  /** How often tracked segments are re-checked for time-based entries and exits (fractions allowed). */
  segmentSweepSeconds: number;
  /** Recipients a campaign queues per actor turn (the cursor is saved after each batch). */
  campaignBatchSize: number;
  /** Seconds between two verification emails to one account. */
  verificationResendSeconds: number;
  /** Bearer token `GET /metrics` requires; unset: /metrics is open. */
  metricsToken?: string;
  /** How long an email the relay answers 4xx for is retried before it is a soft bounce (hours, fractions allowed). */
  softBounceRetryHours: number;
  /** Soft bounces of one contact within `softBounceWindowDays` that suppress the address (0: never). */
  softBounceSuppressCount: number;
  softBounceWindowDays: number;
  /** The inbound SMTP listener's port (mailer role); 0: no listener. */
  inboundSmtpPort: number;
  /** The host name MX records for bounce and inbound mail point at (also the fallback Return-Path domain). */
  inboundHost: string;
  /** Days (fractions allowed) each received message's raw bytes are kept for GET /inbound/:eventId/raw; 0 keeps none. */
  inboundRawRetentionDays: number;
  /** Tests only: the PEM file every SNS signature is checked with, instead of fetching SigningCertURL. */
  snsTestCertificate?: string;
}

function int(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return n;
}

/** A count of at least 1 (batch sizes). */
function positiveInt(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const n = int(name, fallback, env);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a whole number of at least 1, got "${env[name]}"`);
  return n;
}

/** A positive number (a duration in its own unit, fractions allowed). */
function positive(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const n = int(name, fallback, env);
  if (n <= 0) throw new Error(`${name} must be a positive number, got "${env[name]}"`);
  return n;
}

/** A whole number, 0 allowed (a count that 0 turns off). */
function wholeNumber(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const n = int(name, fallback, env);
  if (!Number.isInteger(n)) throw new Error(`${name} must be a whole number, got "${env[name]}"`);
  return n;
}

/** A positive duration in seconds, at least `min`. */
function seconds(name: string, fallback: number, min: number, env: NodeJS.ProcessEnv): number {
  const n = int(name, fallback, env);
  if (n <= 0) throw new Error(`${name} must be a positive number of seconds, got "${env[name]}"`);
  return Math.max(n, min);
}

/** A TCP port, 0 meaning "off". */
function tcpPort(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const n = int(name, fallback, env);
  if (!Number.isInteger(n) || n > 65535) throw new Error(`${name} must be a port number (0 turns it off), got "${env[name]}"`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = int('PORT', 3000, env);
  const publicUrl = (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, '');
  return {
    port,
    httpKeepAliveSeconds: positive('HTTP_KEEP_ALIVE_SECONDS', 65, env),
    publicUrl,
    dataDir: env.DATA_DIR || './data',
    sqliteCacheMb: positiveInt('SQLITE_CACHE_MB', DEFAULT_CACHE_MB, env),
    smtpUrl: env.SMTP_URL || undefined,
    smtpConnections: positiveInt('SMTP_CONNECTIONS', DEFAULT_SMTP_CONNECTIONS, env),
    dnsServers: (env.DNS_SERVERS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    emailRatePerSecond: int('EMAIL_RATE_PER_SECOND', 14, env),
    apiRatePerMinute: int('API_RATE_PER_MINUTE', 1000, env),
    webhookAllowPrivate: /^(1|true|yes)$/i.test(env.WEBHOOK_ALLOW_PRIVATE ?? ''),
    webhookTimeoutMs: Math.max(1, int('WEBHOOK_TIMEOUT_MS', 10_000, env)),
    webhookAttempts: Math.max(1, int('WEBHOOK_ATTEMPTS', 3, env)),
    webhookRetrySeconds: seconds('WEBHOOK_RETRY_SECONDS', 5, 0.05, env),
    redisUrl: env.REDIS_URL || undefined,
    mongodbUrl: env.MONGODB_URL || undefined,
    systemFrom: env.SYSTEM_FROM || `no-reply@${new URL(publicUrl).hostname}`,
    segmentSweepSeconds: seconds('SEGMENT_SWEEP_SECONDS', 60, 0.1, env),
    campaignBatchSize: positiveInt('CAMPAIGN_BATCH_SIZE', 500, env),
    verificationResendSeconds: positiveInt('VERIFICATION_RESEND_SECONDS', 60, env),
    metricsToken: env.METRICS_TOKEN || undefined,
    softBounceRetryHours: positive('SOFT_BOUNCE_RETRY_HOURS', 72, env),
    softBounceSuppressCount: wholeNumber('SOFT_BOUNCE_SUPPRESS_COUNT', 3, env),
    softBounceWindowDays: positive('SOFT_BOUNCE_WINDOW_DAYS', 7, env),
    inboundSmtpPort: tcpPort('INBOUND_SMTP_PORT', 2525, env),
    inboundHost: (env.INBOUND_HOST || new URL(publicUrl).hostname).toLowerCase().replace(/\.$/, ''),
    inboundRawRetentionDays: int('INBOUND_RAW_RETENTION_DAYS', 30, env),
    snsTestCertificate: env.SNS_TEST_CERTIFICATE || undefined,
  };
}
