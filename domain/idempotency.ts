import { createHash } from 'node:crypto';
import { DuplicateKeyError, type Doc } from '../ports/store.ts';
import type { Platform } from '../runtime/platform.ts';
import { AppError } from './errors.ts';
import { newId, nowIso } from './ids.ts';

interface IdempotencyDoc extends Doc {
  hash: string;
  state: 'pending' | 'done';
  response?: unknown;
  /**
   * The id the work derives the ids of what it writes from (an event, emails): kept by a
   * take-over, so work a crashed first attempt did finds its records again instead of adding others.
   */
  seed?: string;
  createdAt: string;
}

/** What the work of a request is told about its attempt. */
export interface Attempt {
  /** A fresh id (UUIDv7) for the first attempt, the same again for a take-over. */
  seed: string;
  /** A take-over of a first attempt cut off by a crash: some of its writes may be there already. */
  resumed: boolean;
}

const KEEP_MS = 24 * 3_600_000;
const WAIT_MS = 10_000;

const hashOf = (body: unknown) => createHash('sha256').update(JSON.stringify(body ?? null)).digest('hex');

/** Keys whose first request is being worked on in this process. */
const working = new Set<string>();

/**
 * `Idempotency-Key`: the first request with a key does the work and its response is kept for
 * 24 h; a repeat with the same body gets that response back without doing the work again, a
 * repeat with another body is a 409. A failed first attempt keeps nothing, so it can be retried;
 * one cut off by a crash leaves its claim pending, and a repeat takes it over after WAIT_MS.
 * `work` gets the claim's seed (a fresh id without a key): the same for the first attempt and a
 * take-over, so the work can name what it writes after it and find what a crashed attempt wrote.
 */
export async function idempotent<T>(
  p: Platform,
  scope: { projectId: string; endpoint: string; key: string | undefined },
  body: unknown,
  work: (attempt: Attempt) => Promise<T>,
): Promise<{ response: T; replayed: boolean }> {
  if (scope.key === undefined) return { response: await work({ seed: newId(), resumed: false }), replayed: false };
  if (scope.key.length === 0 || scope.key.length > 255) {
    throw new AppError('VALIDATION_ERROR', 'Invalid Idempotency-Key', {
      fieldErrors: [{ field: 'Idempotency-Key', message: 'Must be 1-255 characters', code: 'invalid' }],
    });
  }
  const keys = p.store.collection<IdempotencyDoc>('idempotency_keys');
  const _id = `${scope.projectId}/${scope.endpoint}/${scope.key}`;
  const hash = hashOf(body);

  let seed = await claim(keys, _id, hash);
  let resumed = false;
  while (seed === null) {
    const existing = await waitForFirst(keys, _id);
    if (existing.hash !== hash) {
      throw new AppError('CONFLICT', 'This Idempotency-Key was used with a different request body');
    }
    if (existing.state === 'done') return { response: existing.response as T, replayed: true };
    // Still pending after WAIT_MS and not worked on in this process: its request died in a crash,
    // which keeps the claim, so this repeat does the work instead of being refused for 24 h.
    // (With several API processes, a first attempt still running elsewhere after WAIT_MS would be
    // done twice.)
    if (working.has(_id)) throw new AppError('CONFLICT', 'A request with this Idempotency-Key is still in progress');
    const takeOver = { _id, hash, state: 'pending', createdAt: existing.createdAt };
    const taken = (await keys.findOneAndUpdate(takeOver, { $set: { createdAt: nowIso() } })) as IdempotencyDoc | null;
    // A claim from before seeds were kept has none: its work cannot be found again.
    if (taken) [seed, resumed] = [taken.seed ?? newId(), true];
  }
  working.add(_id);
  try {
    const response = await work({ seed, resumed });
    await keys.updateOne({ _id }, { $set: { state: 'done', response } });
    return { response, replayed: false };
  } catch (err) {
    await keys.deleteOne({ _id });
    throw err;
  } finally {
    working.delete(_id);
  }
}

/** Claims the key for this request; returns the claim's seed, or null when the key is taken. */
async function claim(keys: ReturnType<Platform['store']['collection']>, _id: string, hash: string): Promise<string | null> {
  const doc: IdempotencyDoc = { _id, hash, state: 'pending', createdAt: nowIso(), seed: newId() };
  try {
    await keys.insertOne(doc);
    return doc.seed!;
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
  // An expired key is free again.
  const stale = new Date(Date.now() - KEEP_MS).toISOString();
  const taken = await keys.findOneAndUpdate({ _id, createdAt: { $lt: stale } }, { $set: { ...doc } });
  return taken !== null ? doc.seed! : null;
}

async function waitForFirst(keys: ReturnType<Platform['store']['collection']>, _id: string): Promise<IdempotencyDoc> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const doc = (await keys.findOne({ _id })) as IdempotencyDoc | null;
    if (!doc) throw new AppError('CONFLICT', 'The first request with this Idempotency-Key failed; retry it');
    if (doc.state === 'done' || Date.now() > deadline) return doc;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
