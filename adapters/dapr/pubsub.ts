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
/** Messages in one bulk publish: a campaign's batch of 500 outbound messages is some 125 KB. */
const BULK_MAX = 500;
/**
 * Bytes of entries in one bulk publish, well under the sidecar's 4 MB request limit (daprd's
 * default): an event's data may be 1 MB (domain/limits.ts). A larger message goes alone.
 */
const BULK_BYTES = 1024 * 1024;
/**
 * How long a bulk publish call waits for the sidecar's answer. A call answers in milliseconds, and
 * within the Redis client's own timeouts when Redis is gone; a sidecar that took the request and
 * hung would otherwise hold the caller (a campaign's batch turn, the actor with it) for undici's
 * 300 s. Past this the call rejects, and the caller publishes again (entries it may have kept are
 * taken twice as once).
 */
const BULK_TIMEOUT_MS = 30_000;

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
  /** Every replica subscribed to a topic takes its messages. */
  readonly handledHereOnly = false;
  readonly #client: DaprClient;
  readonly #server: DaprServer | undefined;
  readonly #name: string;
  readonly #store: DocumentStore;
  readonly #log: Logger;
  readonly #handlers = new Map<string, { handler: MessageHandler<any>; options: SubscribeOptions }>();
  /** Delivery attempts per message id, for the `attempt` the port promises (best effort). */
  readonly #attempts = new Map<string, number>();
  readonly #bulkTimeoutMs: number;

  constructor(options: { client: DaprClient; server?: DaprServer; pubsubName: string; store: DocumentStore; log: Logger; bulkTimeoutMs?: number }) {
    this.#client = options.client;
    this.#bulkTimeoutMs = options.bulkTimeoutMs ?? BULK_TIMEOUT_MS;
    this.#server = options.server;
    this.#name = options.pubsubName;
    this.#store = options.store;
    this.#log = options.log;
  }

  async publish<T>(topic: string, data: T): Promise<void> {
    const result = await this.#client.pubsub.publish(this.#name, topic, envelopeOf(data));
    if (result?.error) throw new Error(`publish to ${topic} failed: ${result.error.message ?? result.error}`);
  }

  subscribe<T>(topic: string, handler: MessageHandler<T>, options: SubscribeOptions = {}): void {
    if (!this.#server) throw new Error('this process does not receive messages');
    if (this.#handlers.has(topic)) throw new Error(`one subscriber per topic and process: ${topic}`);
    this.#handlers.set(topic, { handler: handler as MessageHandler<any>, options });
  }

  /**
   * Dapr's bulk publish (`/v1.0-alpha1/publish/bulk`), up to BULK_MAX messages (and BULK_BYTES) a
   * call: one request to the sidecar, which writes the entries to Redis concurrently, instead of
   * one round trip (and one fsync) each. Some entries can fail while others are kept (Redis
   * killed mid-call): the call then rejects, as a failed `publish` in a loop would have left the
   * first ones published, and callers publish again what is still to do (their handlers take a
   * message twice as once).
   *
   * Posted here, not through the SDK's `publishBulk`: that answers a 500 from the sidecar with no
   * failed messages (it looks for `entryID` where Dapr writes `entryId`; dapr/js-sdk#703), so a
   * campaign's batch lost to a Redis outage counted as sent and the campaign never finished.
   */
  async publishMany<T>(topic: string, messages: T[]): Promise<void> {
    const { daprHost, daprPort, daprApiToken } = this.#client.options;
    const url = `http://${daprHost}:${daprPort}/v1.0-alpha1/publish/bulk/${encodeURIComponent(this.#name)}/${encodeURIComponent(topic)}`;
    const headers = { 'content-type': 'application/json', ...(daprApiToken ? { 'dapr-api-token': daprApiToken } : {}) };
    for (const entries of bulkCalls(messages)) {
      // The signal bounds the answer's body too.
      const signal = AbortSignal.timeout(this.#bulkTimeoutMs);
      try {
        const response = await fetch(url, { method: 'POST', headers, body: `[${entries.join(',')}]`, signal });
        if (response.ok) {
          await response.arrayBuffer(); // 204: every entry is in the topic
          continue;
        }
        const text = await response.text();
        throw new Error(`bulk publish to ${topic} failed (${response.status}) for ${failedCount(text) ?? 'all'} of ${entries.length} messages: ${firstError(text)}`);
      } catch (err) {
        if (!signal.aborted) throw err;
        throw new Error(`bulk publish to ${topic} got no answer from the sidecar within ${this.#bulkTimeoutMs} ms for ${entries.length} messages (some may be published)`);
      }
    }
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

/** The bulk publish entries of `messages` (each as JSON), split into calls by BULK_MAX and BULK_BYTES. */
function* bulkCalls(messages: unknown[]): Generator<string[]> {
  let call: string[] = [];
  let bytes = 0;
  for (const data of messages) {
    const entry = JSON.stringify({ entryId: randomUUID(), event: envelopeOf(data), contentType: 'application/json' });
    const size = Buffer.byteLength(entry);
    if (call.length > 0 && (call.length === BULK_MAX || bytes + size > BULK_BYTES)) {
      yield call;
      call = [];
      bytes = 0;
    }
    call.push(entry);
    bytes += size;
  }
  if (call.length > 0) yield call;
}

/** How many entries the sidecar's failure answer (`{failedEntries: [{entryId, error}], errorCode}`) names. */
function failedCount(text: string): number | undefined {
  try {
    const failed = (JSON.parse(text) as { failedEntries?: unknown[] }).failedEntries;
    return Array.isArray(failed) ? failed.length : undefined;
  } catch {
    return undefined;
  }
}

/** The first entry's error, or the answer itself (a 4xx names what was wrong with the request). */
function firstError(text: string): string {
  try {
    const body = JSON.parse(text) as { failedEntries?: { error?: string }[]; message?: string };
    return body.failedEntries?.[0]?.error ?? body.message ?? text;
  } catch {
    return text;
  }
}

function envelopeOf(data: unknown): Envelope {
  const requestId = currentRequestId();
  return { messageId: randomUUID(), data, ...(requestId ? { requestId } : {}) };
}
