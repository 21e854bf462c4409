import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { EmbeddedActorHost } from '../../adapters/embedded/actor-host.ts';
import { EmbeddedPubSub } from '../../adapters/embedded/pubsub.ts';
import { MemoryRateLimiter } from '../../adapters/embedded/rate-limiter.ts';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { openStore } from '../harness/store.ts';
import { contacts } from '../../domain/contacts/collection.ts';
import { jobs } from '../../domain/jobs/collection.ts';
import { queueBulk } from '../../domain/jobs/service.ts';
import { startJobWorker } from '../../domain/jobs/worker.ts';
import { loadConfig } from '../../runtime/config.ts';
import type { Platform } from '../../runtime/platform.ts';
import { eventually } from '../harness/client.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

it('a job whose actor calls keep failing ends FAILED with the reason, instead of RUNNING forever', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-jobs-'));
  const store = await openStore(dir);
  // No ContactActor registered: every actor call fails the way an unreachable runtime does.
  const actors = new EmbeddedActorHost(store);
  const pubsub = new EmbeddedPubSub(store, { backoffMs: 1, maxBackoffMs: 5 });
  const p: Platform = { config: loadConfig({}), store, actors, pubsub, limiter: new MemoryRateLimiter(), log: pino({ level: 'silent' }) };
  cleanups.push(async () => {
    await pubsub.stop();
    await actors.stop();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const at = new Date().toISOString();
  await contacts(store).insertOne({ _id: 'c1', projectId: 'p1', email: 'a@example.com', subscribed: true, data: {}, createdAt: at, updatedAt: at });

  startJobWorker(p);
  await actors.start();
  await pubsub.start();
  const queued = await queueBulk(p, 'p1', 'unsubscribe', ['c1']);

  const job = await eventually(async () => {
    const doc = await jobs(store).findOne({ _id: queued.id });
    return doc?.status === 'FAILED' ? doc : undefined;
  });
  expect(job.finishedAt).not.toBeNull();
  expect(job.errors.at(-1)?.message).toMatch(/^Job stopped: .*unknown actor type/);
  expect(job.processed).toBe(0);
});
