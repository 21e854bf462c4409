/**
 * The app channel: the HTTP server the sidecar calls this app on, for actor calls, reminders and
 * pub/sub messages. The SDK starts it with `app.listen(port)`, which would listen on every
 * interface and close idle connections after Node's 5 s default; both are wrong here.
 */
import { createServer } from 'node:http';
import express from 'express';

/** The address the channel listens on: the sidecar's `--app-channel-address` (its default). */
export const APP_CHANNEL_HOST = '127.0.0.1';

/**
 * How long the channel keeps an idle connection open. The sidecar pools its connections to the
 * app for 90 s (Go's default IdleConnTimeout) and does not retry a POST that meets one the app
 * has just closed (the actor call fails with "connection reset by peer"), so the app must never
 * be the side that closes first.
 */
export const APP_CHANNEL_IDLE_MS = 120_000;

/**
 * An express app for DaprServer's `serverHttp`. Express 5 answers a failing actor call or
 * reminder with a 500, so the sidecar retries it; on the SDK's own express 4 the same failure is
 * an unhandled rejection that ends the app. The channel serves the sidecar alone: actor calls on
 * it are not authenticated, so it listens on loopback only.
 */
export function appChannel(): express.Express {
  const app = express();
  app.listen = ((port: number) => {
    const server = createServer(app);
    server.keepAliveTimeout = APP_CHANNEL_IDLE_MS;
    return server.listen(port, APP_CHANNEL_HOST);
  }) as express.Express['listen'];
  return app;
}
