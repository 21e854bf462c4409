import type { Server } from 'node:http';
import express from 'express';
import type { Logger } from 'pino';
import { campaignActor, resumeCampaigns } from '../actors/campaign/actor.ts';
import { contactActor } from '../actors/contact/actor.ts';
import { workflowExecutionActor } from '../actors/workflow-execution/actor.ts';
import { segmentSweepActor, startSegmentSweep } from '../actors/segment-sweep/actor.ts';
import { createApp } from '../apps/api/app.ts';
import { startInboundListener } from '../apps/mailer/inbound.ts';
import { startMailer } from '../apps/mailer/mailer.ts';
import { ensureAccountIndexes } from '../domain/accounts/collections.ts';
import { ensureCampaignIndexes } from '../domain/campaigns/collection.ts';
import { ensureContactIndexes } from '../domain/contacts/collection.ts';
import { ensureDomainIndexes } from '../domain/domains/collection.ts';
import { ensureEventIndexes } from '../domain/events/collection.ts';
import { ensureJobIndexes, startJobWorker } from '../domain/jobs/worker.ts';
import { ensureEmailIndexes } from '../domain/mail/outbound.ts';
import { ensureSuppressionIndexes } from '../domain/suppressions/collection.ts';
import { startEmailResults } from '../domain/mail/results.ts';
import { ensureRawMessageIndexes, startRawMessageSweep } from '../domain/inbound/raw.ts';
import { startReceivedMail } from '../domain/inbound/received.ts';
import { ensureSegmentIndexes } from '../domain/segments/collection.ts';
import { ensurePresenceIndexes } from '../domain/segments/membership.ts';
import { ensureTemplateIndexes } from '../domain/templates/collection.ts';
import { ensureWorkflowIndexes } from '../domain/workflows/collection.ts';
import { resumeExecutions } from '../domain/workflows/triggers.ts';
import { startRecordedEventHandlers } from '../domain/events/recorded.ts';
import { ensureWebhookIndexes } from '../domain/webhooks/collection.ts';
import { resumeDeliveries } from '../domain/webhooks/deliveries.ts';
import { webhookQueues } from '../actors/webhook-queue/actor.ts';
import type { Config } from './config.ts';
import { createLogger } from './logging.ts';
import { Metrics, metricsEndpoint } from './metrics.ts';
import type { Platform } from './platform.ts';

export type Adapters = Pick<Platform, 'store' | 'actors' | 'pubsub' | 'limiter' | 'blobs'> & {
  /** Called once actors and subscriptions are registered (Dapr: open the app channel). */
  ready?(): Promise<void>;
  /** Releases what the adapters hold beyond the store. */
  close?(): Promise<void>;
};

export interface Running {
  platform: Platform;
  server?: Server;
  close(): Promise<void>;
}

export { createLogger } from './logging.ts';

function healthOnly(metrics: Metrics, metricsToken: string | undefined): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/health', (_req, res) => {
    res.json({ success: true, data: { status: 'ok' } });
  });
  app.get('/metrics', metricsEndpoint(metrics, metricsToken));
  return app;
}

/**
 * Wires the domain onto a set of adapters and starts the roles this process plays:
 * `api` serves HTTP and hosts the actors and background jobs; `mailer` sends email.
 * Embedded mode plays both in one process.
 */
export async function boot(
  config: Config,
  adapters: Adapters,
  roles: { api: boolean; mailer: boolean },
  log: Logger = createLogger(),
): Promise<Running> {
  const metrics = new Metrics({ store: adapters.store, actors: adapters.actors, roles, log });
  const platform: Platform = { config, log, ...adapters, metrics };
  const { store, actors, pubsub } = platform;

  await ensureAccountIndexes(store);
  await ensureContactIndexes(store);
  await ensureDomainIndexes(store);
  await ensureEventIndexes(store);
  await ensureEmailIndexes(store);
  await ensureJobIndexes(store);
  await ensureTemplateIndexes(store);
  await ensureSegmentIndexes(store);
  await ensureCampaignIndexes(store);
  await ensurePresenceIndexes(store);
  await ensureWorkflowIndexes(store);
  await ensureSuppressionIndexes(store);
  await ensureWebhookIndexes(store);
  await ensureRawMessageIndexes(store);

  const queues = roles.api ? webhookQueues(platform) : undefined;
  if (roles.api) {
    actors.register(contactActor(platform));
    actors.register(campaignActor(platform));
    actors.register(segmentSweepActor(platform));
    actors.register(workflowExecutionActor(platform));
    actors.register(queues!.definition);
    startRecordedEventHandlers(platform);
    startJobWorker(platform);
    startEmailResults(platform);
    startReceivedMail(platform);
  }
  const mailer = roles.mailer ? startMailer(platform) : undefined;

  await actors.start();
  await pubsub.start();
  await adapters.ready?.();
  // Bounce and feedback reports and inbound mail, once pub/sub carries what it takes to the api role.
  const inbound = roles.mailer && config.inboundSmtpPort > 0 ? await startInboundListener(platform) : undefined;
  const stopSweep = roles.api ? startSegmentSweep(platform) : undefined;
  const stopRawSweep = roles.mailer ? startRawMessageSweep(platform) : undefined;
  if (roles.api) void resumeCampaigns(platform).catch((err) => log.error({ err }, 'resuming campaigns failed'));
  if (roles.api) {
    // Embedded reminders live in the same store as the executions; Dapr's are re-registered.
    const rearm = process.env.MAILROOM_MODE === 'distributed';
    void resumeExecutions(platform, { rearm }).catch((err) => log.error({ err }, 'resuming workflow executions failed'));
    void resumeDeliveries(platform).catch((err) => log.error({ err }, 'resuming webhook deliveries failed'));
  }

  let server: Server | undefined;
  // The api serves the whole API on PORT; a mailer on its own serves /health and /metrics there.
  const app = roles.api ? createApp(platform) : roles.mailer ? healthOnly(metrics, config.metricsToken) : undefined;
  if (app) {
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(config.port, () => resolve(s));
      // Longer than the idle timeout of the load balancer in front (60 s on AWS's ALB, nginx's
      // upstream keepalive): Node's 5 s default closes connections the balancer still holds, and
      // a request it sends on one just closed is answered 502 (docs/decisions.md, "Operations").
      s.keepAliveTimeout = config.httpKeepAliveSeconds * 1000;
    });
  }
  log.info({ port: config.port, roles }, 'mailroom started');

  return {
    platform,
    server,
    async close() {
      stopSweep?.();
      stopRawSweep?.();
      if (server) {
        const closed = new Promise((resolve) => server!.close(resolve));
        server.closeAllConnections();
        await closed;
      }
      await inbound?.close();
      await pubsub.stop();
      await queues?.stop();
      await actors.stop();
      mailer?.close();
      await adapters.close?.();
      await store.close();
    },
  };
}
