import { createHash } from 'node:crypto';
import { DuplicateKeyError, type Doc } from '../ports/store.ts';
import type { Platform } from '../runtime/platform.ts';
import { AppError } from './errors.ts';
import { newId, nowIso } from './ids.ts';

interface IdempotencyDoc extends Doc {
  hash: string;
  /** `failed`: the work threw; a repeat runs it again at once (see `idempotent`). */
  state: 'pending' | 'done' | 'failed';
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
 * repeat with another body is a 409. A failed attempt leaves its claim `failed`: a repeat runs
 * the work again at once, with the same seed when the body is the same (the failure may have come
 * after some of the work was written, when another process died under it) or afresh for another
 * body; one cut off by a crash leaves its claim pending, and a repeat takes it over after WAIT_MS.
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

  let attempt = await claim(keys, _id, hash);
  while (attempt === null) {
    const existing = await waitForFirst(keys, _id);
    // Failed, or gone (no code removes a claim any more; only a hand-cleaned store): claim it again.
    if (!existing || existing.state === 'failed') {
      attempt = await claim(keys, _id, hash);
      continue;
    }
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
    if (taken) attempt = { seed: taken.seed ?? newId(), resumed: true };
  }
  working.add(_id);
  try {
    const response = await work(attempt);
    await keys.updateOne({ _id }, { $set: { state: 'done', response } });
    return { response, replayed: false };
  } catch (err) {
    await keys.updateOne({ _id }, { $set: { state: 'failed' } });
    throw err;
  } finally {
    working.delete(_id);
  }
}

/** Claims the key for this request; returns the attempt, or null when the key is taken. */
async function claim(keys: ReturnType<Platform['store']['collection']>, _id: string, hash: string): Promise<Attempt | null> {
  const doc: IdempotencyDoc = { _id, hash, state: 'pending', createdAt: nowIso(), seed: newId() };
  try {
    await keys.insertOne(doc);
    return { seed: doc.seed!, resumed: false };
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
  // A failed attempt with this body: again, on its seed, as it may have written some of its work.
  const retried = (await keys.findOneAndUpdate({ _id, hash, state: 'failed' }, { $set: { state: 'pending', createdAt: doc.createdAt } })) as IdempotencyDoc | null;
  if (retried) return { seed: retried.seed ?? newId(), resumed: true };
  // An expired key, or a failed attempt with another body, is free again.
  const stale = new Date(Date.now() - KEEP_MS).toISOString();
  const { _id: _, ...fresh } = doc;
  const taken = await keys.findOneAndUpdate({ _id, $or: [{ createdAt: { $lt: stale } }, { state: 'failed' }] }, { $set: fresh });
  return taken !== null ? { seed: doc.seed!, resumed: false } : null;
}

async function waitForFirst(keys: ReturnType<Platform['store']['collection']>, _id: string): Promise<IdempotencyDoc | null> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const doc = (await keys.findOne({ _id })) as IdempotencyDoc | null;
    if (!doc || doc.state !== 'pending' || Date.now() > deadline) return doc;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
