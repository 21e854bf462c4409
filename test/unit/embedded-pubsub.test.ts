import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EmbeddedPubSub } from '../../adapters/embedded/pubsub.ts';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { openStore } from '../harness/store.ts';
import type { Delivery } from '../../ports/pubsub.ts';

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

describe('EmbeddedPubSub', () => {
  let dir: string;
  let store: SqliteStore;
  const instances: EmbeddedPubSub[] = [];
  let errors: ReturnType<typeof vi.spyOn>;

  function newPubSub(options?: ConstructorParameters<typeof EmbeddedPubSub>[1]) {
    const ps = new EmbeddedPubSub(store, options);
    instances.push(ps);
    return ps;
  }

  async function restartStore() {
    for (const ps of instances.splice(0)) await ps.stop();
    await store.close();
    store = await openStore(dir);
  }

  const pending = () => store.collection('_pubsub');
  const dead = () => store.collection('_dead_letters');

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'mailroom-pubsub-'));
    store = await openStore(dir);
    errors = vi.spyOn(console, 'error').mockImplementation(() => {});
  });

  afterEach(async () => {
    for (const ps of instances.splice(0)) await ps.stop();
    await store.close().catch(() => {});
    await fs.rm(dir, { recursive: true, force: true });
    vi.restoreAllMocks();
  });

  it('delivers a message once on success and deletes its record', async () => {
    const ps = newPubSub();
    const got: Array<{ data: unknown; delivery: Delivery }> = [];
    ps.subscribe<{ n: number }>('email.sent', async (data, delivery) => {
      got.push({ data, delivery });
    });
    await ps.start();
    await ps.publish('email.sent', { n: 1, nested: { at: '2024-01-01T00:00:00.000Z' } });
    await waitFor(() => got.length === 1, 10_000, 'delivery');
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'record deletion');
    await sleep(100);
    expect(got).toHaveLength(1);
    expect(got[0].data).toEqual({ n: 1, nested: { at: '2024-01-01T00:00:00.000Z' } });
    expect(got[0].delivery).toMatchObject({ topic: 'email.sent', attempt: 1 });
    expect(typeof got[0].delivery.messageId).toBe('string');
  });

  it('hands a message over as the store keeps it, without reading it back, and reads the store for a retry', async () => {
    const ps = newPubSub({ backoffMs: 1 });
    const got: unknown[] = [];
    ps.subscribe<Record<string, unknown>>('t', async (data, { attempt }) => {
      got.push(data);
      if (attempt === 1) throw new Error('once more');
    });
    await ps.start();
    const reads = vi.spyOn(pending(), 'findOne');
    const data = { at: new Date('2024-01-01T00:00:00.000Z'), gone: undefined, list: [1] };
    await ps.publish('t', data);
    data.list.push(2); // the publisher's object is not the message
    await waitFor(() => got.length === 2, 10_000, 'the retry');
    // A JSON copy, as a restart would read it: the Date as its ISO string, undefined gone.
    expect(got).toEqual([
      { at: '2024-01-01T00:00:00.000Z', list: [1] },
      { at: '2024-01-01T00:00:00.000Z', list: [1] },
    ]);
    expect(reads).toHaveBeenCalledTimes(1); // the retry's, not the first delivery's
  });

  it('deletes delivered messages together, not one write each', async () => {
    const ps = newPubSub();
    let got = 0;
    ps.subscribe('t', async () => void got++);
    const deletes = vi.spyOn(pending(), 'deleteMany');
    const deleteOne = vi.spyOn(pending(), 'deleteOne');
    await ps.publishMany('t', Array.from({ length: 200 }, (_, n) => ({ n })));
    await ps.start();
    await waitFor(() => got === 200, 10_000, 'deliveries');
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'record deletion');
    expect(deleteOne).not.toHaveBeenCalled();
    expect(deletes.mock.calls.length).toBeLessThan(20);
  });

  it('publishMany writes one bundle per subscriber in one insert before it resolves, delivers each message once, then deletes it', async () => {
    const ps = newPubSub();
    const got: Array<Array<{ n: number; delivery: Delivery }>> = [[], []];
    ps.subscribe<{ n: number }>('t', async ({ n }, delivery) => void got[0].push({ n, delivery }));
    ps.subscribe<{ n: number }>('t', async ({ n }, delivery) => void got[1].push({ n, delivery }));
    const inserts = vi.spyOn(pending(), 'insertMany');
    await ps.publishMany('t', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(inserts).toHaveBeenCalledTimes(1);
    const bundles = await pending().find({}, { sort: { _id: 1 } });
    expect(bundles).toHaveLength(2);
    const bundleId = String(bundles[0]._id).split(':')[0];
    const messages = bundles[0].messages as { messageId: string; data: unknown }[];
    expect(messages.map((m) => m.data)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(new Set(messages.map((m) => m.messageId)).size).toBe(3);
    expect(bundles.map((b) => ({ ...b, nextAt: typeof b.nextAt, publishedAt: typeof b.publishedAt }))).toEqual(
      [0, 1].map((subscriber) => ({ _id: `${bundleId}:${subscriber}`, topic: 't', subscriber, messages, count: 3, nextAt: 'string', publishedAt: 'string' })),
    );
    await ps.start();
    await waitFor(() => got[0].length + got[1].length === 6, 10_000, 'deliveries');
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'bundle deletion');
    await sleep(100);
    for (const lane of got) {
      expect(lane.map(({ n }) => n)).toEqual([1, 2, 3]);
      // Each message keeps its own id, the same for every subscriber, on its first attempt.
      expect(lane.map(({ delivery }) => delivery)).toEqual(messages.map(({ messageId }) => ({ messageId, topic: 't', attempt: 1 })));
    }
  });

  it("a bundle's message that fails moves to a record of its own; the others are delivered once, and the bundle goes", async () => {
    const ps = newPubSub({ backoffMs: 60_000 });
    const got: Array<{ n: number; delivery: Delivery }> = [];
    ps.subscribe<{ n: number }>('t', async ({ n }, delivery) => {
      got.push({ n, delivery });
      if (n === 2) throw new Error('not now');
    });
    await ps.start();
    await ps.publishMany('t', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await waitFor(() => got.length === 3, 10_000, 'first deliveries');
    const failed = got.find(({ n }) => n === 2)!.delivery;
    // The bundle is gone once its other two are delivered; the failed message waits as its own record.
    await waitFor(async () => (await pending().countDocuments({})) === 1, 5_000, 'the bundle deleted');
    const own = (await pending().findOne({}))!;
    expect({ ...own, nextAt: Date.parse(own.nextAt as string) > Date.now() + 20_000 }).toEqual({
      _id: `${failed.messageId}:0`,
      messageId: failed.messageId,
      topic: 't',
      subscriber: 0,
      data: { n: 2 },
      attempt: 2,
      nextAt: true,
      publishedAt: own.publishedAt,
    });
    // Made due now: the second attempt, the same message.
    await pending().updateOne({ _id: own._id }, { $set: { nextAt: new Date(Date.now() - 1).toISOString() } });
    await ps.stop();
    const ps2 = newPubSub({ backoffMs: 60_000 });
    const again: Array<{ n: number; delivery: Delivery }> = [];
    ps2.subscribe<{ n: number }>('t', async ({ n }, delivery) => void again.push({ n, delivery }));
    await ps2.start();
    await waitFor(() => again.length === 1, 10_000, 'the retry');
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'record deletion');
    await sleep(100);
    expect(again).toEqual([{ n: 2, delivery: { messageId: failed.messageId, topic: 't', attempt: 2 } }]);
    expect(got.map(({ n }) => n).sort()).toEqual([1, 2, 3]);
  });

  it("dead-letters a bundle's message that fails maxAttempts times, and only that one", async () => {
    const ps = newPubSub({ maxAttempts: 2, backoffMs: 5, maxBackoffMs: 20 });
    const calls = new Map<number, number>();
    ps.subscribe<{ n: number }>('t', async ({ n }) => {
      calls.set(n, (calls.get(n) ?? 0) + 1);
      if (n === 1) throw new Error('broken');
    });
    await ps.start();
    await ps.publishMany('t', [{ n: 0 }, { n: 1 }, { n: 2 }]);
    await waitFor(async () => (await dead().countDocuments({})) === 1, 10_000, 'dead letter');
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'records deleted');
    await sleep(100);
    const letter = (await dead().findOne({}))!;
    expect(letter).toMatchObject({ _id: `${letter.messageId}:0`, topic: 't', subscriber: 0, data: { n: 1 }, attempt: 2, error: 'broken' });
    expect([...calls.entries()].sort()).toEqual([
      [0, 1],
      [1, 2],
      [2, 1],
    ]);
  });

  it('delivers the bundles a restart finds, each message once, and reads each bundle once when it kept no copy', async () => {
    const ps = newPubSub();
    ps.subscribe('t', async () => {});
    // More than FRESH_RECORDS (2,000): no copies are kept, and bundles hold 500 messages at most.
    const n = 2_001;
    await ps.publishMany('t', Array.from({ length: n }, (_, i) => ({ i })));
    expect((await pending().find({}, { projection: { count: 1 } })).map((b) => b.count)).toEqual([500, 500, 500, 500, 1]);
    await restartStore();
    const ps2 = newPubSub({ concurrency: 64 });
    const got: number[] = [];
    ps2.subscribe<{ i: number }>('t', async ({ i }) => void got.push(i));
    const reads = vi.spyOn(pending(), 'findOne');
    await ps2.start();
    await waitFor(() => got.length === n, 10_000, 'deliveries after the restart');
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'bundle deletion');
    await sleep(100);
    expect(got).toEqual(Array.from({ length: n }, (_, i) => i)); // in publish order
    expect(reads).toHaveBeenCalledTimes(5);
  });

  it('stop() and start() on the same instance deliver only what a bundle has left', async () => {
    const ps = newPubSub();
    const release = gate();
    const got: number[] = [];
    ps.subscribe<{ i: number }>('t', async ({ i }) => {
      if (i >= 2) await release.opened;
      got.push(i);
    }, { concurrency: 1 });
    await ps.start();
    await ps.publishMany('t', Array.from({ length: 6 }, (_, i) => ({ i })));
    await waitFor(() => got.length === 2 && ps.inFlight === 1, 10_000, 'two delivered, one waiting');
    const stopped = ps.stop();
    release.open();
    await stopped;
    expect(got).toEqual([0, 1, 2]);
    await ps.start();
    await waitFor(() => got.length === 6, 10_000, 'the rest');
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'bundle deletion');
    await sleep(100);
    expect(got).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('writes one durable record per subscriber before publish resolves', async () => {
    const ps = newPubSub();
    ps.subscribe('t', async () => {});
    ps.subscribe('t', async () => {});
    await ps.publish('t', { x: 1 });
    const records = await pending().find({}, { sort: { _id: 1 } });
    expect(records).toHaveLength(2);
    const messageId = records[0].messageId as string;
    expect(records.map((r) => ({ ...r, nextAt: typeof r.nextAt, publishedAt: typeof r.publishedAt }))).toEqual([
      { _id: `${messageId}:0`, messageId, topic: 't', subscriber: 0, data: { x: 1 }, attempt: 1, nextAt: 'string', publishedAt: 'string' },
      { _id: `${messageId}:1`, messageId, topic: 't', subscriber: 1, data: { x: 1 }, attempt: 1, nextAt: 'string', publishedAt: 'string' },
    ]);
  });

  it('stores nothing for a topic without subscribers in this process', async () => {
    const ps = newPubSub();
    ps.subscribe('other', async () => {});
    await ps.start();
    await ps.publish('nobody.listens', { x: 1 });
    expect(await pending().countDocuments({})).toBe(0);
  });

  it('redelivers after failures with increasing attempts and the same messageId', async () => {
    const ps = newPubSub({ backoffMs: 5, maxBackoffMs: 50 });
    const deliveries: Delivery[] = [];
    ps.subscribe('flaky', async (_data, delivery) => {
      deliveries.push(delivery);
      if (deliveries.length <= 2) throw new Error(`failure ${deliveries.length}`);
    });
    await ps.start();
    await ps.publish('flaky', 'payload');
    await waitFor(() => deliveries.length === 3, 10_000, 'three deliveries');
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'record deletion');
    await sleep(100);
    expect(deliveries.map((d) => d.attempt)).toEqual([1, 2, 3]);
    expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(1);
    expect(await dead().countDocuments({})).toBe(0);
  });

  it('moves a message that always fails to _dead_letters after maxAttempts and logs it', async () => {
    const ps = newPubSub({ maxAttempts: 3, backoffMs: 5, maxBackoffMs: 20 });
    let calls = 0;
    ps.subscribe('broken', async () => {
      calls++;
      throw new Error('smtp exploded');
    });
    await ps.start();
    await ps.publish('broken', { id: 42 });
    await waitFor(async () => (await dead().countDocuments({})) === 1, 10_000, 'dead letter');
    const letter = (await dead().findOne({}))!;
    expect(letter).toMatchObject({ topic: 'broken', subscriber: 0, data: { id: 42 }, attempt: 3, error: 'smtp exploded' });
    expect(typeof letter.deadAt).toBe('string');
    expect(letter._id).toBe(`${letter.messageId}:0`);
    expect(await pending().countDocuments({})).toBe(0);
    await sleep(100);
    expect(calls).toBe(3);
    expect(errors.mock.calls.some((args: unknown[]) => String(args[0]).includes('dead-lettered'))).toBe(true);
  });

  it('delivers to every subscriber; one failing does not redeliver to the others', async () => {
    const ps = newPubSub({ backoffMs: 5 });
    let okCalls = 0;
    let flakyCalls = 0;
    ps.subscribe('fan', async () => {
      okCalls++;
    });
    ps.subscribe('fan', async () => {
      if (++flakyCalls === 1) throw new Error('once');
    });
    await ps.start();
    await ps.publish('fan', {});
    await waitFor(() => flakyCalls === 2, 10_000, 'retry');
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'records deleted');
    expect(okCalls).toBe(1);
  });

  it('keeps messages published before start() and delivers them after it', async () => {
    const ps = newPubSub();
    const got: unknown[] = [];
    ps.subscribe('early', async (data) => {
      got.push(data);
    });
    await ps.publish('early', 1);
    await ps.publish('early', 2);
    await sleep(50);
    expect(got).toEqual([]);
    await ps.start();
    await waitFor(() => got.length === 2, 10_000, 'deliveries');
    expect(got).toEqual([1, 2]);
  });

  it('delivers messages still pending at stop() with a new instance on the reopened store', async () => {
    const ps = newPubSub({ backoffMs: 60_000 });
    let firstCalls = 0;
    ps.subscribe('jobs', async () => {
      firstCalls++;
      throw new Error('not now');
    });
    await ps.start();
    await ps.publish('jobs', { job: 'a' });
    await waitFor(() => firstCalls === 1, 10_000, 'first attempt');
    await ps.stop();
    await ps.publish('jobs', { job: 'b' }); // accepted while stopped
    await restartStore();
    expect(await pending().countDocuments({})).toBe(2);

    const ps2 = newPubSub();
    const got: Array<{ data: unknown; attempt: number }> = [];
    ps2.subscribe('jobs', async (data, delivery) => {
      got.push({ data, attempt: delivery.attempt });
    });
    // 'a' is backing off for a minute; make it due now, as after a long outage.
    await pending().updateMany({}, { $set: { nextAt: new Date(Date.now() - 1).toISOString() } });
    await ps2.start();
    await waitFor(() => got.length === 2, 10_000, 'deliveries after restart');
    expect(got).toEqual(
      expect.arrayContaining([
        { data: { job: 'a' }, attempt: 2 },
        { data: { job: 'b' }, attempt: 1 },
      ]),
    );
    await waitFor(async () => (await pending().countDocuments({})) === 0, 5_000, 'records deleted');
  });

  it('stop() waits for running handlers', async () => {
    const ps = newPubSub();
    const release = gate();
    let finished = false;
    ps.subscribe('slow', async () => {
      await release.opened;
      finished = true;
    });
    await ps.start();
    await ps.publish('slow', {});
    await waitFor(() => ps.inFlight === 1, 10_000, 'handler running');
    const stopped = ps.stop();
    setTimeout(release.open, 30);
    await stopped;
    expect(finished).toBe(true);
    expect(await pending().countDocuments({})).toBe(0);
  });

  it('runs at most `concurrency` handlers at once', async () => {
    const ps = newPubSub({ concurrency: 3 });
    const release = gate();
    let inside = 0;
    let maxInside = 0;
    let done = 0;
    ps.subscribe('bulk', async () => {
      inside++;
      maxInside = Math.max(maxInside, inside);
      await release.opened;
      await sleep(1);
      inside--;
      done++;
    });
    await ps.start();
    for (let i = 0; i < 20; i++) await ps.publish('bulk', i);
    await waitFor(() => inside === 3, 10_000, 'three handlers running');
    await sleep(100);
    expect(inside).toBe(3);
    release.open();
    await waitFor(() => done === 20, 10_000, 'all handled');
    expect(maxInside).toBe(3);
  });

  it("runs a subscription's own `concurrency` where it asks for one, the default for the others", async () => {
    const ps = newPubSub({ concurrency: 2 });
    const release = gate();
    const inside = { wide: 0, narrow: 0 };
    const handler = (lane: keyof typeof inside) => async () => {
      inside[lane]++;
      await release.opened;
    };
    // A number no handler could run under is refused when subscribing, not found out as a stalled queue.
    for (const concurrency of [0, 1.5, Number.NaN]) {
      expect(() => ps.subscribe('wide', handler('wide'), { concurrency })).toThrow('concurrency must be a positive integer');
    }
    ps.subscribe('wide', handler('wide'), { concurrency: 5 });
    ps.subscribe('narrow', handler('narrow'));
    await ps.start();
    for (let i = 0; i < 10; i++) await Promise.all([ps.publish('wide', i), ps.publish('narrow', i)]);
    await waitFor(() => inside.wide === 5 && inside.narrow === 2, 10_000, 'five and two handlers running');
    await sleep(100);
    expect(inside).toEqual({ wide: 5, narrow: 2 });
    release.open();
  });

  it('delivers in publish order with concurrency 1', async () => {
    const ps = newPubSub({ concurrency: 1 });
    const got: number[] = [];
    ps.subscribe<number>('ordered', async (n) => {
      got.push(n);
    });
    for (let i = 0; i < 10; i++) await ps.publish('ordered', i);
    await ps.start();
    for (let i = 10; i < 20; i++) await ps.publish('ordered', i);
    await waitFor(() => got.length === 20, 10_000, 'deliveries');
    expect(got).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });
});
