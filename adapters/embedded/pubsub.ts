/**
 * The embedded pub/sub: a durable at-least-once queue in the document store.
 *
 * In embedded mode every subscriber lives in this process, so `publish` writes one record per
 * handler subscribed to the topic (in this process) into `_pubsub` before it resolves; a topic
 * nobody here subscribes to stores nothing: the message is dropped, as a broker drops a message
 * for a topic without subscriptions.
 *
 * Records, one per message and subscriber: `{ _id: "<messageId>:<subscriberIndex>", messageId,
 * topic, subscriber, data, attempt, nextAt, publishedAt, requestId? }` where `subscriber` is the
 * handler's index among the topic's subscriptions in registration order (so subscribe in a stable
 * order), `attempt` is the number of the next (or running) delivery, starting at 1, and timestamps
 * are ISO strings.
 *
 * Bundles: `publishMany` of more than one message writes, per subscriber, one record for up to
 * BUNDLE_MAX of them on their first delivery: `{ _id: "<bundleId>:<subscriberIndex>", topic,
 * subscriber, messages: [{ messageId, data }], count, nextAt, publishedAt, requestId? }`. Each
 * message is delivered on its own as before; one that fails leaves the bundle as a record of its
 * own (attempt 2, or a dead letter), and the bundle is deleted once all of its messages are
 * delivered or have left it. A crash before that delivers the bundle's messages again (at least
 * once, as a crash before a delete always could). A record per message made a campaign's every
 * email an insert and a delete here: in pairs each way, 2% more CPU and 3% fewer emails a second
 * relay-signed than bundles (bench/results/campaign-profile.md, session 26).
 *
 * Delivery starts with `start()` (which also picks up everything still pending, e.g. after a
 * crash). Each subscription has its own queue and runs at most `concurrency` handlers at a time,
 * best-effort FIFO by publish time, so a slow topic never holds up another. Success deletes the
 * record. A throw sets attempt + 1 and nextAt = now + exponential backoff with jitter; the
 * delivery that fails with attempt = maxAttempts moves the record to `_dead_letters`
 * (`{ ...record, error, deadAt }`) and logs it, unless the subscription retries forever.
 * Records whose topic/subscriber has no handler in this process are left pending, with a
 * warning at start.
 */
import { newId } from '../../domain/ids.ts';
import type { MessageHandler, PubSub, SubscribeOptions } from '../../ports/pubsub.ts';
import { currentRequestId, withRequestId } from '../../runtime/request-context.ts';
import type { Collection, DocumentStore } from '../../ports/store.ts';
import { TimerQueue, runDetached } from './timer-queue.ts';

export const PUBSUB_COLLECTION = '_pubsub';
export const DEAD_LETTER_COLLECTION = '_dead_letters';

export type PubSubRecord = {
  _id: string;
  messageId: string;
  topic: string;
  subscriber: number;
  data: unknown;
  attempt: number;
  nextAt: string;
  publishedAt: string;
  /** The request whose work published it; current again in the handler. */
  requestId?: string;
};

/** Messages published together, for one subscriber, on their first delivery (see the top of this file). */
export type BundleRecord = {
  _id: string;
  topic: string;
  subscriber: number;
  messages: { messageId: string; data: unknown }[];
  count: number;
  nextAt: string;
  publishedAt: string;
  requestId?: string;
};

type QueuedRecord = PubSubRecord | BundleRecord;

export type DeadLetterRecord = PubSubRecord & { error: string; deadAt: string };

/** A bundle some of whose messages are not delivered yet; its messages are queued as `<record id>#<index>`. */
interface OpenBundle {
  /** The messages delivered or moved to records of their own. */
  settled: Uint8Array;
  open: number;
  /** Its messages queued and not taken for delivery yet: once none is, the copy goes. */
  waiting: number;
  /** The record as the store keeps it (a JSON copy), while its messages are being taken. */
  copy?: BundleRecord;
  /** Its read from the store, under way: the messages taken meanwhile wait for the same one. */
  reading?: Promise<BundleRecord | null>;
  /** Whether the copy counts against FRESH_RECORDS (one made at publish does). */
  counted: boolean;
}

export interface EmbeddedPubSubOptions {
  /** Deliveries per message and subscriber before it becomes a dead letter (default 10). */
  maxAttempts?: number;
  /** Backoff base: the retry after attempt n waits about backoffMs * 2^(n-1), jittered (default 250). */
  backoffMs?: number;
  /** Cap on one backoff (default 60 000). */
  maxBackoffMs?: number;
  /** Handlers running at once, per subscription, unless it asks for another number (default 32). */
  concurrency?: number;
}

/** One subscription: its handler, its queue of record ids by due time, its running deliveries. */
interface Lane {
  handler: MessageHandler<any>;
  options: SubscribeOptions;
  /** Its handlers running at once: its own `concurrency`, or the pub/sub's. */
  concurrency: number;
  queue: TimerQueue;
  running: Set<Promise<void>>;
}

export class EmbeddedPubSub implements PubSub {
  /** The queue is in this process's store, and only this process delivers it. */
  readonly handledHereOnly = true;
  readonly #store: DocumentStore;
  readonly #maxAttempts: number;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #concurrency: number;
  /** Subscriptions by topic, in registration order (the index is the record's `subscriber`). */
  readonly #lanes = new Map<string, Lane[]>();
  /**
   * Records this process published and has not delivered yet, as the store would give them back
   * (a JSON copy): their first delivery takes them from here instead of reading each back (a
   * read per message was some 3% of a campaign's event loop). Bounded; a retry, a restart, or
   * a record beyond the bound reads the store, which stays the truth.
   */
  readonly #fresh = new Map<string, PubSubRecord>();
  /** Bundles with messages left, by record id: each is read from the store once at most while queued. */
  readonly #bundles = new Map<string, OpenBundle>();
  /** Messages held in bundle copies made at publish, counted with `#fresh` against FRESH_RECORDS. */
  #bundledCopies = 0;
  /**
   * Records delivered and not deleted yet: deleted together, one statement per turn of the event
   * loop instead of one write each. A crash before that delivers them again, as a crash before a
   * delete always could (at least once).
   */
  #delivered: string[] = [];
  #deleting: Promise<void> | undefined;
  #started = false;

  constructor(store: DocumentStore, options: EmbeddedPubSubOptions = {}) {
    this.#store = store;
    this.#maxAttempts = positiveInt(options.maxAttempts, 10, 'maxAttempts');
    this.#backoffMs = nonNegative(options.backoffMs, 250, 'backoffMs');
    this.#maxBackoffMs = nonNegative(options.maxBackoffMs, 60_000, 'maxBackoffMs');
    this.#concurrency = positiveInt(options.concurrency, 32, 'concurrency');
  }

  subscribe<T>(topic: string, handler: MessageHandler<T>, options: SubscribeOptions = {}): void {
    if (typeof handler !== 'function') throw new TypeError('handler must be a function');
    if (this.#started) throw new Error(`subscribe to ${topic} before start()`);
    const list = this.#lanes.get(topic) ?? [];
    const lane: Lane = {
      handler: handler as MessageHandler<any>,
      options,
      concurrency: positiveInt(options.concurrency, this.#concurrency, 'concurrency'),
      queue: new TimerQueue(() => this.#dispatch(lane)),
      running: new Set(),
    };
    list.push(lane);
    this.#lanes.set(topic, list);
  }

  publish<T>(topic: string, data: T): Promise<void> {
    return this.publishMany(topic, [data]);
  }

  async publishMany<T>(topic: string, messages: T[]): Promise<void> {
    const handlers = this.#lanes.get(topic);
    if (!handlers || handlers.length === 0 || messages.length === 0) return;
    if (messages.length > 1) return this.#publishBundles(topic, handlers, messages);
    const now = new Date();
    const iso = now.toISOString();
    const requestId = currentRequestId();
    // Time-ordered: records are appended to the table's id index, where they are soon deleted too.
    const messageId = newId();
    const records = handlers.map(
      (_, subscriber): PubSubRecord => ({
        _id: `${messageId}:${subscriber}`,
        messageId,
        topic,
        subscriber,
        data: messages[0],
        attempt: 1,
        nextAt: iso,
        publishedAt: iso,
        ...(requestId ? { requestId } : {}),
      }),
    );
    await this.#collection().insertMany(records);
    if (this.#copiesHeld() + records.length <= FRESH_RECORDS) {
      for (const copy of JSON.parse(JSON.stringify(records)) as PubSubRecord[]) this.#fresh.set(copy._id, copy);
    }
    // Queued even before start(): the queue only runs once started, and start() skips ids it has.
    for (const rec of records) handlers[rec.subscriber].queue.set(rec._id, now.getTime());
  }

  /** Several messages: a bundle record per subscriber for each BUNDLE_MAX of them, in one insert. */
  async #publishBundles<T>(topic: string, handlers: Lane[], messages: T[]): Promise<void> {
    const now = new Date();
    const iso = now.toISOString();
    const requestId = currentRequestId();
    const records: BundleRecord[] = [];
    for (let from = 0; from < messages.length; from += BUNDLE_MAX) {
      const bundleId = newId();
      const bundled = messages.slice(from, from + BUNDLE_MAX).map((data) => ({ messageId: newId(), data }));
      handlers.forEach((_, subscriber) =>
        records.push({
          _id: `${bundleId}:${subscriber}`,
          topic,
          subscriber,
          messages: bundled,
          count: bundled.length,
          nextAt: iso,
          publishedAt: iso,
          ...(requestId ? { requestId } : {}),
        }),
      );
    }
    await this.#collection().insertMany(records);
    const copies = this.#copiesHeld() + messages.length * handlers.length <= FRESH_RECORDS ? (JSON.parse(JSON.stringify(records)) as BundleRecord[]) : undefined;
    records.forEach((rec, i) => {
      const copy = copies?.[i];
      this.#bundles.set(rec._id, { settled: new Uint8Array(rec.count), open: rec.count, waiting: rec.count, copy, counted: !!copy });
      if (copy) this.#bundledCopies += rec.count;
      const { queue } = handlers[rec.subscriber];
      for (let index = 0; index < rec.count; index++) queue.set(bundledKey(rec._id, index), now.getTime());
    });
  }

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    let pending: (Pick<PubSubRecord, '_id' | 'topic' | 'subscriber' | 'nextAt'> & { count?: number })[];
    try {
      pending = await this.#collection().find(
        {},
        { sort: { nextAt: 1, publishedAt: 1 }, projection: { topic: 1, subscriber: 1, nextAt: 1, count: 1 } },
      );
    } catch (err) {
      this.#started = false;
      throw err;
    }
    const orphans = new Map<string, number>();
    for (const rec of pending) {
      const lane = this.#lanes.get(rec.topic)?.[rec.subscriber];
      if (!lane) {
        const k = `${rec.topic}#${rec.subscriber}`;
        orphans.set(k, (orphans.get(k) ?? 0) + 1);
        continue;
      }
      const parsed = Date.parse(rec.nextAt);
      const due = Number.isFinite(parsed) ? parsed : 0;
      if (typeof rec.count !== 'number') {
        lane.queue.setIfAbsent(rec._id, due);
        continue;
      }
      // A bundle: its messages this process has not settled (all of them after a restart).
      let bundle = this.#bundles.get(rec._id);
      if (!bundle) this.#bundles.set(rec._id, (bundle = { settled: new Uint8Array(rec.count), open: rec.count, waiting: 0, counted: false }));
      for (let index = 0; index < rec.count; index++) {
        if (!bundle.settled[index] && lane.queue.setIfAbsent(bundledKey(rec._id, index), due)) bundle.waiting++;
      }
    }
    for (const [k, count] of orphans) {
      console.error(`[pubsub] ${count} pending message(s) for ${k} have no handler in this process; left pending`);
    }
    for (const lane of this.#allLanes()) {
      lane.queue.resume();
      this.#dispatch(lane);
    }
  }

  async stop(): Promise<void> {
    this.#started = false;
    for (const lane of this.#allLanes()) lane.queue.pause();
    for (const lane of this.#allLanes()) {
      while (lane.running.size > 0) await Promise.allSettled([...lane.running]);
    }
    while (this.#deleting) await this.#deleting;
    // Everything not delivered is still in the store; start() loads it again.
    for (const lane of this.#allLanes()) lane.queue.clear();
    this.dropCopies();
    for (const bundle of this.#bundles.values()) bundle.waiting = 0;
  }

  /** Forgets the copies of published records (the store rolled back writes they may be of). */
  dropCopies(): void {
    this.#fresh.clear();
    for (const bundle of this.#bundles.values()) {
      bundle.copy = undefined;
      bundle.counted = false;
    }
    this.#bundledCopies = 0;
  }

  /** Messages waiting in memory (due or backing off); for tests and metrics. */
  get pending(): number {
    return this.#allLanes().reduce((n, lane) => n + lane.queue.size, 0);
  }

  /** Handlers running right now; for tests and metrics. */
  get inFlight(): number {
    return this.#allLanes().reduce((n, lane) => n + lane.running.size, 0);
  }

  #allLanes(): Lane[] {
    return [...this.#lanes.values()].flat();
  }

  #collection(): Collection<QueuedRecord> {
    return this.#store.collection<QueuedRecord>(PUBSUB_COLLECTION);
  }

  #copiesHeld(): number {
    return this.#fresh.size + this.#bundledCopies;
  }

  #dispatch(lane: Lane): void {
    if (!this.#started) return;
    while (lane.running.size < lane.concurrency) {
      const id = lane.queue.takeDue();
      if (id === undefined) return;
      const delivery = runDetached(() => this.#deliver(lane, id));
      lane.running.add(delivery);
      void delivery.finally(() => {
        lane.running.delete(delivery);
        // Through the event loop, not straight on: a handler whose store calls never wait on
        // I/O would otherwise chain deliveries as microtasks and hold every request meanwhile.
        setImmediate(() => this.#dispatch(lane));
      });
    }
  }

  async #deliver(lane: Lane, id: string): Promise<void> {
    const bundled = bundledKeyParts(id);
    if (bundled) return this.#deliverBundled(lane, id, bundled.recordId, bundled.index);
    let rec: PubSubRecord | null = null;
    try {
      rec = this.#fresh.get(id) ?? ((await this.#collection().findOne({ _id: id })) as PubSubRecord | null);
      this.#fresh.delete(id);
      if (!rec) return; // already handled (a duplicate queue entry)
      const { data, messageId, topic, attempt } = rec;
      const failure = await this.#run(lane, rec.requestId, data, { messageId, topic, attempt });
      if (failure === undefined) this.#deleteDelivered(id);
      else await this.#failed(lane, rec, failure.err, true);
    } catch (err) {
      // The store failed around the handler: keep the record and try again later.
      console.error(`[pubsub] bookkeeping for ${id} failed; will retry:`, err);
      if (this.#started) lane.queue.set(id, Date.now() + this.#backoff(rec?.attempt ?? 1));
    }
  }

  /** Message `index` of a bundle, on its first delivery; one that fails leaves for a record of its own. */
  async #deliverBundled(lane: Lane, key: string, recordId: string, index: number): Promise<void> {
    const bundle = this.#bundles.get(recordId);
    if (!bundle || bundle.settled[index]) return; // already handled (a duplicate queue entry)
    bundle.waiting--;
    try {
      let rec = bundle.copy;
      if (!rec) {
        bundle.reading ??= (this.#collection().findOne({ _id: recordId }) as Promise<BundleRecord | null>).finally(() => (bundle.reading = undefined));
        const read = await bundle.reading;
        if (!read) {
          this.#bundles.delete(recordId); // deleted meanwhile: every message was handled
          return;
        }
        rec = read;
        // Kept while its other messages wait (queued one after another, they are taken soon).
        if (bundle.waiting > 0) bundle.copy ??= rec;
      }
      if (bundle.waiting === 0) this.#dropCopy(bundle);
      const { messageId, data } = rec.messages[index];
      const failure = await this.#run(lane, rec.requestId, data, { messageId, topic: rec.topic, attempt: 1 });
      if (failure !== undefined) {
        const { topic, subscriber, nextAt, publishedAt, requestId } = rec;
        const own: PubSubRecord = { _id: `${messageId}:${subscriber}`, messageId, topic, subscriber, data, attempt: 1, nextAt, publishedAt, ...(requestId ? { requestId } : {}) };
        await this.#failed(lane, own, failure.err, false);
      }
      this.#settle(recordId, bundle, index);
    } catch (err) {
      console.error(`[pubsub] bookkeeping for ${key} failed; will retry:`, err);
      if (this.#started && !lane.queue.has(key)) {
        lane.queue.set(key, Date.now() + this.#backoff(1));
        bundle.waiting++;
      }
    }
  }

  /** Runs the handler; what it threw, if it threw. */
  async #run(lane: Lane, requestId: string | undefined, data: unknown, delivery: { messageId: string; topic: string; attempt: number }): Promise<{ err: unknown } | undefined> {
    try {
      await withRequestId(requestId, () => lane.handler(data, delivery));
      return undefined;
    } catch (err) {
      return { err };
    }
  }

  /**
   * After a failed delivery: the message's next attempt, or its dead letter once it has had
   * maxAttempts. `stored`: the record is in the store (a message from a bundle has none yet).
   */
  async #failed(lane: Lane, rec: PubSubRecord, failure: unknown, stored: boolean): Promise<void> {
    const error = errorMessage(failure);
    if (rec.attempt >= this.#maxAttempts && !lane.options.retryForever) {
      const dead: DeadLetterRecord = { ...rec, error, deadAt: new Date().toISOString() };
      // Started together, the two writes share one commit in the SQLite store: a move, never a copy.
      await Promise.all([
        this.#store.collection<DeadLetterRecord>(DEAD_LETTER_COLLECTION).replaceOne({ _id: rec._id }, dead, { upsert: true }),
        ...(stored ? [this.#collection().deleteOne({ _id: rec._id })] : []),
      ]);
      console.error(
        `[pubsub] message ${rec.messageId} on ${rec.topic} (subscriber ${rec.subscriber}) ` +
          `dead-lettered after ${rec.attempt} attempts: ${error}`,
      );
      return;
    }
    const nextAt = Date.now() + this.#backoff(rec.attempt);
    const next = { attempt: rec.attempt + 1, nextAt: new Date(nextAt).toISOString() };
    if (stored) await this.#collection().updateOne({ _id: rec._id }, { $set: next });
    else await this.#collection().replaceOne({ _id: rec._id }, { ...rec, ...next }, { upsert: true });
    if (this.#started) lane.queue.set(rec._id, nextAt);
  }

  /** A bundle's message is done with: the bundle goes once none is left. */
  #settle(recordId: string, bundle: OpenBundle, index: number): void {
    if (bundle.settled[index]) return;
    bundle.settled[index] = 1;
    if (--bundle.open > 0) return;
    this.#dropCopy(bundle);
    this.#bundles.delete(recordId);
    this.#deleteDelivered(recordId);
  }

  #dropCopy(bundle: OpenBundle): void {
    if (bundle.counted) this.#bundledCopies -= bundle.settled.length;
    bundle.copy = undefined;
    bundle.counted = false;
  }

  #deleteDelivered(id: string): void {
    this.#delivered.push(id);
    if (this.#deleting) return;
    this.#deleting = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
      for (let retry = 0; this.#delivered.length > 0; ) {
        const ids = this.#delivered;
        this.#delivered = [];
        try {
          await this.#collection().deleteMany({ _id: { $in: ids } });
        } catch (err) {
          // Stopping: they stay in the store, and a start delivers them again.
          if (!this.#started) break;
          console.error(`[pubsub] deleting ${ids.length} delivered message(s) failed; will retry:`, err);
          this.#delivered.push(...ids);
          await new Promise((resolve) => setTimeout(resolve, this.#backoff(++retry)));
        }
      }
      this.#delivered = [];
      this.#deleting = undefined;
    });
  }

  /** Exponential backoff after failed attempt `attempt` (1-based), with "equal jitter". */
  #backoff(attempt: number): number {
    const exp = Math.min(this.#backoffMs * 2 ** Math.min(attempt - 1, 40), this.#maxBackoffMs);
    return Math.round(exp / 2 + Math.random() * (exp / 2));
  }
}

/** Published messages kept in memory for their first delivery, at most: a campaign's in-flight window (a few MB). */
const FRESH_RECORDS = 2_000;

/** Messages in one bundle record at most: a campaign's batch (CAMPAIGN_BATCH_SIZE, 500 by default) in one. */
const BUNDLE_MAX = 500;

/** The queue's key of a bundle's message (a single record's is its id, which holds no "#"), and back. */
const bundledKey = (recordId: string, index: number) => `${recordId}#${index}`;
function bundledKeyParts(key: string): { recordId: string; index: number } | undefined {
  const hash = key.lastIndexOf('#');
  return hash === -1 ? undefined : { recordId: key.slice(0, hash), index: Number(key.slice(hash + 1)) };
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  try {
    return typeof err === 'string' ? err : JSON.stringify(err);
  } catch {
    return String(err);
  }
}

function positiveInt(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
  return value;
}

function nonNegative(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!(value >= 0) || !Number.isFinite(value)) throw new RangeError(`${name} must be a non-negative number`);
  return value;
}
