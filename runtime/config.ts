/** The environment of DESIGN.md's operational contract, read once at start-up. */
export interface Config {
  port: number;
  publicUrl: string;
  dataDir: string;
  smtpUrl?: string;
  dnsServers: string[];
  emailRatePerSecond: number;
  apiRatePerMinute: number;
  webhookAllowPrivate: boolean;
  redisUrl?: string;
  mongodbUrl?: string;
  /** Sender of the platform's own mail (account verification). Not in the contract; optional. */
  systemFrom: string;
}

function int(name: string, fallback: number, env: NodeJS.ProcessEnv): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got "${raw}"`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = int('PORT', 3000, env);
  const publicUrl = (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, '');
  return {
    port,
    publicUrl,
    dataDir: env.DATA_DIR || './data',
    smtpUrl: env.SMTP_URL || undefined,
    dnsServers: (env.DNS_SERVERS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    emailRatePerSecond: int('EMAIL_RATE_PER_SECOND', 14, env),
    apiRatePerMinute: int('API_RATE_PER_MINUTE', 1000, env),
    webhookAllowPrivate: /^(1|true|yes)$/i.test(env.WEBHOOK_ALLOW_PRIVATE ?? ''),
    redisUrl: env.REDIS_URL || undefined,
    mongodbUrl: env.MONGODB_URL || undefined,
    systemFrom: env.SYSTEM_FROM || `no-reply@${new URL(publicUrl).hostname}`,
  };
}
