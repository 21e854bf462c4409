// A message of a retryForever subscription stays pending in Redis only if a round of Dapr's retries
// outlasts the component's processingTimeout (adapters/dapr/pubsub.ts, RETRY_HOLD_MS): the adapter's
// figures must be those of the component files, and a failed delivery must answer no sooner.
import { readFile } from 'node:fs/promises';
import { DaprPubSubStatusEnum, type DaprClient, type DaprServer } from '@dapr/dapr';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ATTEMPTS_PER_ROUND, DaprPubSub, PROCESSING_TIMEOUT_MS, RETRY_HOLD_MS, UNHELD_ATTEMPTS } from '../../adapters/dapr/pubsub.ts';
import type { DocumentStore } from '../../ports/store.ts';

const seconds = (text: string, name: string) => {
  const value = new RegExp(`name: ${name}\\s+value: "(\\d+)s"`).exec(text)?.[1];
  if (!value) throw new Error(`no ${name} in seconds`);
  return Number(value) * 1_000;
};
const maxRetries = (text: string) => Number(/maxRetries: (\d+)/.exec(text)?.[1]);

describe('the Dapr pub/sub adapter and its component files', () => {
  for (const [pubsub, resiliency] of [
    ['components/pubsub.yaml', 'components/resiliency.yaml'],
    ['deploy/manifests/11-dapr-pubsub.yaml', 'deploy/manifests/12-dapr-resiliency.yaml'],
  ]) {
    it(`agree on processingTimeout and the retries (${pubsub})`, async () => {
      expect(seconds(await readFile(pubsub, 'utf8'), 'processingTimeout')).toBe(PROCESSING_TIMEOUT_MS);
      expect(maxRetries(await readFile(resiliency, 'utf8')) + 1).toBe(ATTEMPTS_PER_ROUND);
      // A round's first calls may be the message's first on this process, which are not held.
      expect((ATTEMPTS_PER_ROUND - UNHELD_ATTEMPTS) * RETRY_HOLD_MS).toBeGreaterThan(PROCESSING_TIMEOUT_MS);
    });
  }
});

describe('a failed delivery', () => {
  afterEach(() => vi.useRealTimers());

  /** The adapter's callbacks by topic, as daprd would call them. */
  async function subscribed(retryForever: boolean) {
    const callbacks = new Map<string, (envelope: unknown) => Promise<DaprPubSubStatusEnum>>();
    const server = { pubsub: { subscribeWithOptions: async (_name: string, topic: string, options: { callback: never }) => void callbacks.set(topic, options.callback) } };
    const pubsub = new DaprPubSub({ client: {} as DaprClient, server: server as unknown as DaprServer, pubsubName: 'pubsub', store: {} as DocumentStore, log: pino({ level: 'silent' }) });
    pubsub.subscribe('t', async () => {
      throw new Error('not now');
    }, { retryForever });
    await pubsub.start();
    return callbacks.get('t')!;
  }

  it('of a subscription that retries forever answers RETRY at once for its first tries, then only after RETRY_HOLD_MS', async () => {
    vi.useFakeTimers();
    const deliver = await subscribed(true);
    for (let i = 0; i < UNHELD_ATTEMPTS; i++) {
      let quick: DaprPubSubStatusEnum | undefined;
      void deliver({ messageId: 'm', data: {} }).then((a) => (quick = a));
      await vi.advanceTimersByTimeAsync(0);
      expect(quick, `try ${i + 1}`).toBe(DaprPubSubStatusEnum.RETRY);
    }
    let answer: DaprPubSubStatusEnum | undefined;
    void deliver({ messageId: 'm', data: {} }).then((a) => (answer = a));
    await vi.advanceTimersByTimeAsync(RETRY_HOLD_MS - 1);
    expect(answer).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(answer).toBe(DaprPubSubStatusEnum.RETRY);
  });

  it('of another subscription answers RETRY at once, every time (its messages end as dead letters)', async () => {
    vi.useFakeTimers();
    const deliver = await subscribed(false);
    for (let i = 0; i <= UNHELD_ATTEMPTS + 1; i++) {
      let answer: DaprPubSubStatusEnum | undefined;
      void deliver({ messageId: 'm', data: {} }).then((a) => (answer = a));
      await vi.advanceTimersByTimeAsync(0);
      expect(answer, `try ${i + 1}`).toBe(DaprPubSubStatusEnum.RETRY);
    }
  });
});
