import { createClient, type RedisClientType } from 'redis';
import type { Logger } from 'pino';

/**
 * A connected Redis client that outlives Redis going away: the client reconnects by itself, and
 * its commands wait meanwhile, but an 'error' event nobody listens to ends the process (a
 * restart of Redis took the api and the mailer down with it). The first error of each outage is
 * logged; the rest of it stays quiet.
 */
export async function connectRedis(url: string, log: Pick<Logger, 'warn' | 'info'>, name: string): Promise<RedisClientType> {
  const client: RedisClientType = createClient({ url });
  let down = false;
  client.on('error', (err: unknown) => {
    if (!down) log.warn({ err, client: name }, 'Redis connection lost; reconnecting');
    down = true;
  });
  client.on('ready', () => {
    if (down) log.info({ client: name }, 'Redis connection back');
    down = false;
  });
  await client.connect();
  return client;
}
