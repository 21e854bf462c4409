// publishMany on Dapr is a bulk publish posted to the sidecar (adapters/dapr/pubsub.ts): each
// message its own envelope, at most 500 a call, and a call the sidecar answers with failed entries
// rejects, so the caller publishes again. Here an HTTP server answers as daprd 1.17 does (its 500
// body as logged with Redis down); the sidecar itself, with Redis killed mid-publish, is
// test/distributed/stack-crash.test.ts's.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { DaprClient } from '@dapr/dapr';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DaprPubSub } from '../../adapters/dapr/pubsub.ts';
import type { DocumentStore } from '../../ports/store.ts';

interface Entry {
  entryId: string;
  event: { messageId: string; data: { n: number } };
  contentType: string;
}

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? (server.closeAllConnections(), server.close(() => resolve())) : resolve())));

/**
 * A sidecar that records each call (its path and entries), and fails the entries `fail` picks;
 * with `hang`, it takes each call and never answers.
 */
async function sidecar(fail: (entry: Entry) => boolean = () => false, { hang = false, bulkTimeoutMs }: { hang?: boolean; bulkTimeoutMs?: number } = {}) {
  const calls: { url: string; entries: Entry[] }[] = [];
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const entries = JSON.parse(body) as Entry[];
      calls.push({ url: req.url!, entries });
      if (hang) return;
      const failed = entries.filter(fail);
      if (failed.length === 0) return void res.writeHead(204).end();
      const error = 'redis streams: error from publish: dial tcp 127.0.0.1:31492: connect: connection refused';
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ failedEntries: failed.map((e) => ({ entryId: e.entryId, error })), errorCode: 'ERR_PUBSUB_PUBLISH_MESSAGE' }));
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const options = { daprHost: '127.0.0.1', daprPort: String((server.address() as AddressInfo).port) };
  const pubsub = new DaprPubSub({ client: { options } as unknown as DaprClient, pubsubName: 'pubsub', store: {} as DocumentStore, log: pino({ level: 'silent' }), bulkTimeoutMs });
  return { pubsub, calls };
}

describe('publishMany on Dapr', () => {
  it('posts every message once to the bulk endpoint, at most 500 a call, each in its own envelope', async () => {
    const { pubsub, calls } = await sidecar();
    await pubsub.publishMany('email.outbound', Array.from({ length: 1_201 }, (_, n) => ({ n })));
    expect(calls.map((c) => [c.url, c.entries.length])).toEqual([
      ['/v1.0-alpha1/publish/bulk/pubsub/email.outbound', 500],
      ['/v1.0-alpha1/publish/bulk/pubsub/email.outbound', 500],
      ['/v1.0-alpha1/publish/bulk/pubsub/email.outbound', 201],
    ]);
    const entries = calls.flatMap((c) => c.entries);
    expect(entries.map((e) => e.event.data.n)).toEqual(Array.from({ length: 1_201 }, (_, n) => n));
    expect(new Set(entries.map((e) => e.event.messageId)).size).toBe(1_201);
    expect(new Set(entries.map((e) => e.entryId)).size).toBe(1_201);
    expect(new Set(entries.map((e) => e.contentType))).toEqual(new Set(['application/json']));
  });

  it('rejects when the sidecar failed some entries of a call, naming how many, and posts no later call', async () => {
    const { pubsub, calls } = await sidecar((entry) => entry.event.data.n % 7 === 3);
    await expect(pubsub.publishMany('t', Array.from({ length: 600 }, (_, n) => ({ n })))).rejects.toThrow(
      'bulk publish to t failed (500) for 71 of 500 messages: redis streams: error from publish: dial tcp 127.0.0.1:31492: connect: connection refused',
    );
    expect(calls).toHaveLength(1);
  });

  it('rejects a call the sidecar takes and never answers, once its wait is over, and posts no later call', async () => {
    const { pubsub, calls } = await sidecar(undefined, { hang: true, bulkTimeoutMs: 300 });
    const started = performance.now();
    await expect(pubsub.publishMany('t', Array.from({ length: 501 }, (_, n) => ({ n })))).rejects.toThrow(
      'bulk publish to t got no answer from the sidecar within 300 ms for 500 messages (some may be published)',
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    expect(calls.map((c) => c.entries.length)).toEqual([500]);
  });

  it('keeps a call under 1 MiB of entries, and sends a larger message alone', async () => {
    const { pubsub, calls } = await sidecar();
    const sizes = [400_000, 400_000, 400_000, 2_000_000, 10];
    await pubsub.publishMany('t', sizes.map((size, n) => ({ n, text: 'é'.repeat(size / 2) })));
    expect(calls.map((c) => c.entries.map((e) => e.event.data.n))).toEqual([[0, 1], [2], [3], [4]]);
  });

  it('makes no call for no messages', async () => {
    const { pubsub, calls } = await sidecar();
    await pubsub.publishMany('t', []);
    expect(calls).toHaveLength(0);
  });
});
