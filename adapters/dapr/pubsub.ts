/**
 * Dapr pub/sub (Redis Streams) behind the PubSub port. Handlers that throw answer RETRY (the SDK
 * would otherwise count a throw as SUCCESS and drop the message); after the resiliency policy's
 * retries Dapr moves the message to `<topic>.dead`, which we keep as a dead-letter record, or, for
 * a subscription that retries forever, leaves it pending for the component to redeliver
 * (RETRY_HOLD_MS says how that is made sure of).
 */
import { randomUUID } from 'node:crypto';
import { DaprPubSubStatusEnum, type DaprClient, type DaprServer } from '@dapr/dapr';
import type { Logger } from 'pino';
import type { MessageHandler, PubSub, SubscribeOptions } from '../../ports/pubsub.ts';
import { currentRequestId, withRequestId } from '../../runtime/request-context.ts';
import type { DocumentStore } from '../../ports/store.ts';

/** What travels on the topic: our id, stable across redeliveries, the data, and the request it is for. */
interface Envelope {
  messageId: string;
  data: unknown;
  requestId?: string;
}

const MAX_TRACKED = 10_000;

/** components/pubsub.yaml's processingTimeout (and deploy/manifests/11-dapr-pubsub.yaml's). */
export const PROCESSING_TIMEOUT_MS = 60_000;
/** Calls of a handler in one round of Dapr's retries: resiliency.yaml's maxRetries (10) and the first. */
export const ATTEMPTS_PER_ROUND = 11;
/**
 * The least time a failed delivery of a retryForever subscription takes to answer RETRY, once its
 * message has failed UNHELD_ATTEMPTS times on this process. The Redis Streams component
 * (components-contrib 1.17, `processMessage`) acknowledges a message whose handler still fails
 * after the last of the resiliency policy's retries, unless processingTimeout has passed since it
 * took the message; only then does the message stay pending, to be redelivered. Dapr's
 * exponential backoff (0.5 s × 1.5ⁿ, ±50%) made a round of 11 calls last 50–58 s here, so a
 * message refused through a whole round (an email while the relay is down for more than a
 * minute) was acknowledged and never handled again. With at least 8 of a round's calls held
 * this long, the round outlasts processingTimeout whatever the backoff (8 × 8 s = 64 s).
 */
export const RETRY_HOLD_MS = 8_000;
/** Failed deliveries of a message answered at once, as before: a passing failure is retried quickly. */
export const UNHELD_ATTEMPTS = 3;

export class DaprPubSub implements PubSub {
  readonly #client: DaprClient;
  readonly #server: DaprServer | undefined;
  readonly #name: string;
  readonly #store: DocumentStore;
  readonly #log: Logger;
  readonly #handlers = new Map<string, { handler: MessageHandler<any>; options: SubscribeOptions }>();
  /** Delivery attempts per message id, for the `attempt` the port promises (best effort). */
  readonly #attempts = new Map<string, number>();

  constructor(options: { client: DaprClient; server?: DaprServer; pubsubName: string; store: DocumentStore; log: Logger }) {
    this.#client = options.client;
    this.#server = options.server;
    this.#name = options.pubsubName;
    this.#store = options.store;
    this.#log = options.log;
  }

  async publish<T>(topic: string, data: T): Promise<void> {
    const requestId = currentRequestId();
    const envelope: Envelope = { messageId: randomUUID(), data, ...(requestId ? { requestId } : {}) };
    const result = await this.#client.pubsub.publish(this.#name, topic, envelope);
    if (result?.error) throw new Error(`publish to ${topic} failed: ${result.error.message ?? result.error}`);
  }

  subscribe<T>(topic: string, handler: MessageHandler<T>, options: SubscribeOptions = {}): void {
    if (!this.#server) throw new Error('this process does not receive messages');
    if (this.#handlers.has(topic)) throw new Error(`one subscriber per topic and process: ${topic}`);
    this.#handlers.set(topic, { handler: handler as MessageHandler<any>, options });
  }

  /** One publish after another: Dapr's bulk publish is still alpha. */
  async publishMany<T>(topic: string, messages: T[]): Promise<void> {
    for (const data of messages) await this.publish(topic, data);
  }

  async start(): Promise<void> {
    if (!this.#server) return;
    for (const [topic, { handler, options }] of this.#handlers) {
      await this.#server.pubsub.subscribeWithOptions(this.#name, topic, {
        callback: (envelope: Envelope) => this.#deliver(topic, handler, envelope, options.retryForever === true),
        // Without a dead-letter topic a message the handler keeps refusing stays pending in the
        // stream (RETRY_HOLD_MS), and the component redelivers it: retried forever.
        ...(options.retryForever
          ? {}
          : {
              deadLetterTopic: `${topic}.dead`,
              deadLetterCallback: async (envelope: Envelope) => {
                await this.#deadLetter(topic, envelope);
                return DaprPubSubStatusEnum.SUCCESS;
              },
            }),
      });
    }
  }

  async stop(): Promise<void> {}

  async #deliver(topic: string, handler: MessageHandler<any>, envelope: Envelope, retryForever: boolean): Promise<DaprPubSubStatusEnum> {
    const started = Date.now();
    const attempt = (this.#attempts.get(envelope.messageId) ?? 0) + 1;
    this.#attempts.set(envelope.messageId, attempt);
    if (this.#attempts.size > MAX_TRACKED) this.#attempts.delete(this.#attempts.keys().next().value!);
    try {
      await withRequestId(envelope.requestId, () => handler(envelope.data, { messageId: envelope.messageId, topic, attempt }));
      this.#attempts.delete(envelope.messageId);
      return DaprPubSubStatusEnum.SUCCESS;
    } catch (err) {
      this.#log.warn({ topic, messageId: envelope.messageId, attempt, err: (err as Error).message }, 'handler failed; retrying');
      const hold = retryForever && attempt > UNHELD_ATTEMPTS ? started + RETRY_HOLD_MS - Date.now() : 0;
      if (hold > 0) await new Promise((resolve) => setTimeout(resolve, hold));
      return DaprPubSubStatusEnum.RETRY;
    }
  }

  async #deadLetter(topic: string, envelope: Envelope): Promise<void> {
    this.#log.error({ topic, messageId: envelope.messageId }, 'message moved to dead letters');
    await this.#store.collection('_dead_letters').replaceOne(
      { _id: envelope.messageId },
      { _id: envelope.messageId, messageId: envelope.messageId, topic, data: envelope.data, deadAt: new Date().toISOString() },
      { upsert: true },
    );
  }
}
