import { createHash } from 'node:crypto';
import { DuplicateKeyError, type Doc } from '../ports/store.ts';
import type { Platform } from '../runtime/platform.ts';
import { AppError } from './errors.ts';
import { nowIso } from './ids.ts';

interface IdempotencyDoc extends Doc {
  hash: string;
  state: 'pending' | 'done';
  response?: unknown;
  createdAt: string;
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
 */
export async function idempotent<T>(
  p: Platform,
  scope: { projectId: string; endpoint: string; key: string | undefined },
  body: unknown,
  work: () => Promise<T>,
): Promise<{ response: T; replayed: boolean }> {
  if (scope.key === undefined) return { response: await work(), replayed: false };
  if (scope.key.length === 0 || scope.key.length > 255) {
    throw new AppError('VALIDATION_ERROR', 'Invalid Idempotency-Key', {
      fieldErrors: [{ field: 'Idempotency-Key', message: 'Must be 1-255 characters', code: 'invalid' }],
    });
  }
  const keys = p.store.collection<IdempotencyDoc>('idempotency_keys');
  const _id = `${scope.projectId}/${scope.endpoint}/${scope.key}`;
  const hash = hashOf(body);

  let claimed = await claim(keys, _id, hash);
  while (!claimed) {
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
    claimed = (await keys.findOneAndUpdate(takeOver, { $set: { createdAt: nowIso() } })) !== null;
  }
  working.add(_id);
  try {
    const response = await work();
    await keys.updateOne({ _id }, { $set: { state: 'done', response } });
    return { response, replayed: false };
  } catch (err) {
    await keys.deleteOne({ _id });
    throw err;
  } finally {
    working.delete(_id);
  }
}

async function claim(keys: ReturnType<Platform['store']['collection']>, _id: string, hash: string): Promise<boolean> {
  const doc: IdempotencyDoc = { _id, hash, state: 'pending', createdAt: nowIso() };
  try {
    await keys.insertOne(doc);
    return true;
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
  }
  // An expired key is free again.
  const stale = new Date(Date.now() - KEEP_MS).toISOString();
  const taken = await keys.findOneAndUpdate({ _id, createdAt: { $lt: stale } }, { $set: { ...doc } });
  return taken !== null;
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
