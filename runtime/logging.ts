/**
 * The process logger: one JSON object per line on stdout (pino), at `LOG_LEVEL` (default info).
 * Every line written while a request's work runs carries its `requestId` (runtime/request-context.ts),
 * in whichever process that work runs. Credentials are censored by key name wherever they appear
 * in a logged object, so an `err` or a request echoed into a log line cannot leak one.
 */
import { pino, type DestinationStream, type Logger } from 'pino';
import { currentRequestId } from './request-context.ts';

/** Keys whose values are credentials or carry them (URLs with user:password, DKIM private keys). */
const SECRET_KEYS = [
  'authorization',
  'cookie',
  'password',
  'passwordHash',
  'token',
  'secretKey',
  'publicKey',
  'secretKeyHash',
  'publicKeyHash',
  'apiKey',
  'privateKey',
  'privateKeyPem',
  'smtpUrl',
  'mongodbUrl',
  'redisUrl',
  'linkSecret',
  'metricsToken',
];

/** The keys at the top of a line and up to three objects deep (`err.config.smtpUrl`, `req.headers.authorization`). */
export const REDACTED_PATHS = SECRET_KEYS.flatMap((key) => [key, `*.${key}`, `*.*.${key}`, `*.*.*.${key}`]);

export interface LoggerOptions {
  /** Default: `LOG_LEVEL`, else `info`. */
  level?: string;
  /** Default: stdout. Tests pass a stream to read the lines back. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      // A field the call names itself wins over the context's, so an explicit requestId stays.
      mixin: () => {
        const requestId = currentRequestId();
        return requestId ? { requestId } : {};
      },
    },
    options.destination,
  );
}
