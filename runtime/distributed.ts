import { CommunicationProtocolEnum, DaprClient, DaprServer, GRPCClient, LogLevel } from '@dapr/dapr';
import type { Logger } from 'pino';
import { DaprActorRuntime } from '../adapters/dapr/actors.ts';
import { APP_CHANNEL_HOST, appChannel } from '../adapters/dapr/app-channel.ts';
import { DaprPubSub } from '../adapters/dapr/pubsub.ts';
import { GridFsBlobStore } from '../adapters/mongo/blobs.ts';
import { MongoStore } from '../adapters/mongo/store.ts';
import { RedisRateLimiter } from '../adapters/redis/rate-limiter.ts';
import { RedisStoreChanges } from '../adapters/redis/store-changes.ts';
import type { Adapters } from './boot.ts';
import type { Config } from './config.ts';

/** The Dapr component names in components/. */
export const PUBSUB_COMPONENT = 'pubsub';

/**
 * Distributed mode: actors and pub/sub through this app's Dapr sidecar (DAPR_HTTP_PORT), the
 * app channel the sidecar calls back on (APP_PORT), MongoDB projections, Redis rate limits and
 * the replicas' channel for cached reads.
 */
export async function distributedAdapters(config: Config, log: Logger, hostsActors: boolean): Promise<Adapters> {
  if (!config.mongodbUrl) throw new Error('distributed mode needs MONGODB_URL');
  if (!config.redisUrl) throw new Error('distributed mode needs REDIS_URL');
  const daprHost = process.env.DAPR_HOST ?? '127.0.0.1';
  const daprPort = process.env.DAPR_HTTP_PORT ?? '3500';
  const appPort = process.env.APP_PORT ?? String(config.port + 1);
  // The SDK logs every client it starts at info level, and it starts one per actor activation.
  const logger = { level: LogLevel.Warn };
  const clientOptions = { daprHost, daprPort, communicationProtocol: CommunicationProtocolEnum.HTTP, logger };

  const client = new DaprClient(clientOptions);
  const grpc = new GRPCClient({
    daprHost,
    daprPort: process.env.DAPR_GRPC_PORT ?? '50001',
    communicationProtocol: CommunicationProtocolEnum.GRPC,
    logger,
  });
  const server = new DaprServer({
    serverHttp: appChannel(),
    serverHost: APP_CHANNEL_HOST,
    serverPort: appPort,
    communicationProtocol: CommunicationProtocolEnum.HTTP,
    clientOptions,
    logger,
    maxBodySizeMb: 20,
  });
  // Read-mostly collections (API keys, workflows) are cached on each replica; writes to them
  // reach the other replicas over Redis.
  const store = await MongoStore.connect(config.mongodbUrl, { changes: (listener) => RedisStoreChanges.connect(config.redisUrl!, listener, log) });
  const limiter = await RedisRateLimiter.connect(config.redisUrl, log);
  const blobs = await GridFsBlobStore.connect(config.mongodbUrl);

  return {
    store,
    limiter,
    blobs,
    actors: new DaprActorRuntime(client, hostsActors ? server : undefined, grpc),
    pubsub: new DaprPubSub({ client, server, pubsubName: PUBSUB_COMPONENT, store, log }),
    // The sidecar asks the app channel for its actor types and subscriptions when it connects,
    // so the channel opens only after both are registered.
    ready: () => server.start(),
    async close() {
      await server.stop();
      await grpc.stop();
      await limiter.close();
      await blobs.close();
    },
  };
}
