/**
 * The pub/sub port: at-least-once delivery of JSON messages by topic.
 * A handler that throws gets the message again later (with backoff); after the adapter's
 * attempt limit the message is kept as a dead letter, never dropped. Handlers must therefore
 * be idempotent. Embedded: durable in-process queue; distributed: Dapr pub/sub on Redis Streams.
 */
export interface Delivery {
  /** Stable across redeliveries of one published message. */
  messageId: string;
  topic: string;
  /** 1 on the first delivery. */
  attempt: number;
}

export type MessageHandler<T = unknown> = (data: T, delivery: Delivery) => Promise<void>;

export interface SubscribeOptions {
  /**
   * Never dead-letter: keep retrying with capped backoff. For work that must wait out an
   * outage rather than be given up, such as handing accepted email to SMTP. The handler
   * decides itself when a message is done for good.
   */
  retryForever?: boolean;
  /**
   * Handlers of this subscription running at once in this process, where the adapter decides that
   * (the embedded pub/sub; its default otherwise). On Dapr the component's settings decide.
   */
  concurrency?: number;
}

export interface PubSub {
  /**
   * Whether every message published here is handled in this process and nowhere else (embedded:
   * the queue lives in this process's store). A handler's hold on what a message names, kept in
   * memory, then keeps every other handler off it (the mailer's claim, apps/mailer/mailer.ts).
   */
  readonly handledHereOnly: boolean;
  /**
   * Resolves once the message is durably accepted. The request id current here
   * (runtime/request-context.ts) travels with the message and is current in its handler.
   */
  publish<T>(topic: string, data: T): Promise<void>;
  /**
   * `publish` of each message, resolving once all are durably accepted, in no order a subscriber
   * may count on (none gets its messages in order anyway): one write for all where the adapter can
   * (embedded: one insert; Dapr: one bulk publish), so a campaign's batch is not one per email.
   * A rejection may leave some of them published: the caller publishes again what is still to do.
   */
  publishMany<T>(topic: string, messages: T[]): Promise<void>;
  /** Declare every subscription before `start()`; at most one per topic in a process. */
  subscribe<T>(topic: string, handler: MessageHandler<T>, options?: SubscribeOptions): void;
  start(): Promise<void>;
  /** Stops delivering; messages not yet handled stay queued for the next start. */
  stop(): Promise<void>;
}
