import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedActorHost } from '../../adapters/embedded/actor-host.ts';
import { EmbeddedPubSub } from '../../adapters/embedded/pubsub.ts';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { openStore } from '../harness/store.ts';
import { createLogger } from '../../runtime/logging.ts';
import { currentRequestId, isValidRequestId, withRequestId } from '../../runtime/request-context.ts';

describe('the request id of the work running now', () => {
  let dir: string;
  let store: SqliteStore;
  const stops: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mailroom-request-context-'));
    store = await openStore(dir);
  });
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reaches the handler of a message published for a request, and no other', async () => {
    const pubsub = new EmbeddedPubSub(store);
    stops.push(() => pubsub.stop());
    const seen: Record<string, string | undefined> = {};
    pubsub.subscribe<{ n: string }>('topic', async ({ n }) => {
      seen[n] = currentRequestId();
    });
    await pubsub.start();
    await withRequestId('req-a', () => pubsub.publish('topic', { n: 'a' }));
    await pubsub.publish('topic', { n: 'none' });
    await withRequestId('req-b', () => pubsub.publish('topic', { n: 'b' }));
    await expect.poll(() => Object.keys(seen).length).toBe(3);
    expect(seen).toEqual({ a: 'req-a', none: undefined, b: 'req-b' });
  });

  it('reaches an actor turn, and the reminder the turn sets when it fires', async () => {
    const host = new EmbeddedActorHost(store);
    stops.push(() => host.stop());
    const fired: (string | undefined)[] = [];
    host.register<unknown>({
      type: 'Probe',
      methods: {
        async remind(ctx) {
          await ctx.setReminder('later', new Date(Date.now() + 20));
          return currentRequestId();
        },
      },
      async onReminder() {
        fired.push(currentRequestId());
      },
    });
    await host.start();
    expect(await withRequestId('req-turn', () => host.invoke('Probe', 'one', 'remind'))).toBe('req-turn');
    expect(host.pendingReminders()).toBe(1);
    // Fired from a timer, long after the request: the id comes from the reminder's record.
    await expect.poll(() => fired).toEqual(['req-turn']);
    expect(host.pendingReminders()).toBe(0);
  });

  it('is on every log line while it is current, and credentials never are', () => {
    const lines: string[] = [];
    const log = createLogger({
      level: 'info',
      destination: new Writable({
        write(chunk, _encoding, done) {
          lines.push(...String(chunk).split('\n').filter(Boolean));
          done();
        },
      }),
    });
    withRequestId('req-log', () =>
      log.info(
        { password: 'pw', body: { secretKey: 'sk_1' }, req: { headers: { authorization: 'Bearer sk_2' } }, err: { config: { smtpUrl: 'smtp://u:p@h' } } },
        'inside',
      ),
    );
    log.info('outside');
    const [inside, outside] = lines.map((l) => JSON.parse(l));
    expect(inside).toMatchObject({ requestId: 'req-log', password: '[redacted]', body: { secretKey: '[redacted]' } });
    expect(inside.req.headers.authorization).toBe('[redacted]');
    expect(inside.err.config.smtpUrl).toBe('[redacted]');
    expect(outside.requestId).toBeUndefined();
  });

  it('accepts a caller id of 1 to 128 safe characters only', () => {
    for (const ok of ['a', 'req_0123', '4bf92f3577b34da6a3ce929d0e0e4736', 'trace:1.2-3_x', 'x'.repeat(128)]) expect(isValidRequestId(ok), ok).toBe(true);
    for (const bad of ['', ' a', 'a b', '-a', 'x'.repeat(129), 'a\nb', 'a"b', 'é', undefined, 42]) expect(isValidRequestId(bad), String(bad)).toBe(false);
  });
});
