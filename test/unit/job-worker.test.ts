import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, expect, it } from 'vitest';
import { EmbeddedActorHost } from '../../adapters/embedded/actor-host.ts';
import { EmbeddedPubSub } from '../../adapters/embedded/pubsub.ts';
import { MemoryRateLimiter } from '../../adapters/embedded/rate-limiter.ts';
import { FileBlobStore } from '../../adapters/files/blobs.ts';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';
import { contactActor } from '../../actors/contact/actor.ts';
import { contacts, ensureContactIndexes } from '../../domain/contacts/collection.ts';
import { chunkId, jobPayloads, jobs } from '../../domain/jobs/collection.ts';
import { readImportFile } from '../../domain/jobs/read-file.ts';
import { queueBulk, queueImport } from '../../domain/jobs/service.ts';
import { ensureJobIndexes, startJobWorker } from '../../domain/jobs/worker.ts';
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
  const p: Platform = { config: loadConfig({}), store, actors, pubsub, limiter: new MemoryRateLimiter(), blobs: new FileBlobStore(join(dir, 'blobs')), log: pino({ level: 'silent' }) };
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

it('an import cut off in the middle of a chunk and run again after a restart counts exactly what it created and updated', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-jobs-'));
  const store = await openStore(dir);
  cleanups.push(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  await ensureContactIndexes(store);
  await ensureJobIndexes(store);

  // The truth: 20 addresses the project has before the import, 100 new ones, and one new address
  // given twice in the chunk the crash cuts off (its second row updates what its first created).
  const at = new Date().toISOString();
  const old = Array.from({ length: 20 }, (_, i) => `old${i}@example.com`);
  await contacts(store).insertMany(old.map((email, i) => ({ _id: `old-${i}`, projectId: 'p1', email, subscribed: true, data: {}, createdAt: at, updatedAt: at, version: 0 })));
  const fresh = Array.from({ length: 100 }, (_, i) => `new${i}@example.com`);
  const lines = fresh.flatMap((email, i) => (i % 5 === 0 ? [email, old[i / 5]] : [email]));
  lines.splice(80, 0, fresh[60]);
  const csv = ['email', ...lines].join('\n');

  // The first process: its contact actor calls freeze from the 75th on (in the second chunk of
  // 50), as a process does when it is killed; the kill then fails them all, so the delivery is
  // left to be run again (the SIGKILL of a real process leaves it pending the same way).
  const first = embeddedPlatform(store);
  first.actors.register(contactActor(first));
  const invoke = first.actors.invoke.bind(first.actors);
  let calls = 0;
  let kill: (err: Error) => void = () => {};
  const killed = new Promise<never>((_, reject) => (kill = reject));
  killed.catch(() => {});
  const frozen = new Set<number>();
  first.actors.invoke = ((...args: Parameters<typeof invoke>) => {
    if (++calls < 75) return invoke(...args);
    frozen.add(calls);
    return killed;
  }) as typeof invoke;
  startJobWorker(first);
  await first.actors.start();
  await first.pubsub.start();
  const queued = await queueImport(first, 'p1', Buffer.from(csv));
  await eventually(async () => (frozen.size > 0 ? true : undefined));
  await new Promise((resolve) => setTimeout(resolve, 50)); // every lane of the chunk reaches its frozen call

  // The kill lands in the middle of the second chunk: the first is counted, the second is not,
  // and some but not all of the second chunk's new contacts exist.
  const atKill = (await jobs(store).findOne({ _id: queued.id }))!;
  expect(atKill).toMatchObject({ status: 'RUNNING', cursor: 50, processed: 50 });
  const secondChunk = [...new Set(lines.slice(50, 100).filter((email) => email.startsWith('new')))];
  const existing = await contacts(store).countDocuments({ projectId: 'p1', email: { $in: secondChunk } });
  expect(existing).toBeGreaterThan(0);
  expect(existing).toBeLessThan(secondChunk.length);
  kill(new Error('killed'));
  await first.pubsub.stop();
  await first.actors.stop();

  // The restart: a new process on the same data runs the cut-off chunk again and the rest.
  const second = embeddedPlatform(store);
  second.actors.register(contactActor(second));
  startJobWorker(second);
  await second.actors.start();
  await second.pubsub.start();
  cleanups.unshift(async () => {
    await second.pubsub.stop();
    await second.actors.stop();
  });
  const job = await eventually(async () => {
    const doc = await jobs(store).findOne({ _id: queued.id });
    return doc?.status === 'COMPLETED' ? doc : undefined;
  }, 20_000);
  expect(await contacts(store).countDocuments({ projectId: 'p1' })).toBe(old.length + fresh.length);
  expect({ total: job.total, processed: job.processed, created: job.created, updated: job.updated, failed: job.failed }).toEqual({
    total: lines.length,
    processed: lines.length,
    created: fresh.length,
    updated: old.length + 1,
    failed: 0,
  });
});

it('reading an import file twice (two deliveries, or again after a crash) writes its chunks once, keeps the contact ids a started chunk planned, and counts its rejected rows once', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-jobs-'));
  const store = await openStore(dir);
  cleanups.push(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  await ensureJobIndexes(store);
  const p = embeddedPlatform(store); // no job worker: the steps are run here by hand
  const csv = ['email', 'not-an-email', ...Array.from({ length: 120 }, (_, i) => `r${i}@example.com`)].join('\n');
  const queued = await queueImport(p, 'p1', Buffer.from(csv));
  const unread = (await jobs(store).findOne({ _id: queued.id }))!;
  expect(unread).toMatchObject({ unreadFile: true, total: 0 });

  // A delivery that read the file first has started the first chunk and planned its contact ids.
  const planned = Array.from({ length: 50 }, (_, i) => `planned-${i}`);
  const firstRows = Array.from({ length: 50 }, (_, i) => ({ row: i + 3, email: `r${i}@example.com`, data: {} }));
  await jobPayloads(store).insertOne({ _id: chunkId(queued.id, 0), jobId: queued.id, items: firstRows, newIds: planned });

  await Promise.all([readImportFile(p, unread), readImportFile(p, unread)]);
  const job = (await jobs(store).findOne({ _id: queued.id }))!;
  expect(job).toMatchObject({ status: 'QUEUED', total: 121, items: 120, processed: 1, failed: 1, errors: [{ row: 2, message: 'Invalid email address "not-an-email"' }] });
  expect(job.unreadFile).toBeUndefined();
  const chunks = await jobPayloads(store).find({ jobId: queued.id });
  expect(chunks.map((c) => c._id).sort()).toEqual([0, 1, 2].map((n) => `${queued.id}/${n}`));
  expect(chunks.find((c) => c._id === chunkId(queued.id, 0))?.newIds).toEqual(planned);
});
