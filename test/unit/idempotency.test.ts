// Idempotency-Key when the work fails: the repeat runs it again at once, on the same seed when the
// body is the same, so what the failed attempt wrote before it failed is found, not written twice.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { idempotent, type Attempt } from '../../domain/idempotency.ts';
import type { Platform } from '../../runtime/platform.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';

describe('Idempotency-Key after a failed attempt', () => {
  let dir: string;
  let p: Platform;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mailroom-idempotency-'));
    p = embeddedPlatform(await openStore(dir), { DATA_DIR: dir });
  });
  afterAll(async () => {
    await p.store.close();
    await rm(dir, { recursive: true, force: true });
  });

  const scope = (key: string) => ({ projectId: 'p1', endpoint: 'track', key });

  it('a repeat of a failed call runs on the same seed, as a take-over, and its answer is kept', async () => {
    const attempts: Attempt[] = [];
    const failing = async (attempt: Attempt) => {
      attempts.push(attempt);
      throw new Error('the contact actor did not answer (its process died after the write)');
    };
    await expect(idempotent(p, scope('k1'), { a: 1 }, failing)).rejects.toThrow('did not answer');
    const repeat = await idempotent(p, scope('k1'), { a: 1 }, async (attempt) => {
      attempts.push(attempt);
      return { event: attempt.seed };
    });
    expect(repeat.replayed).toBe(false);
    expect(attempts[1]).toEqual({ seed: attempts[0].seed, resumed: true });
    expect((await idempotent(p, scope('k1'), { a: 1 }, async () => ({ event: 'again' }))).response).toEqual({ event: attempts[0].seed });
  });

  it('a failed call repeated with another body is a new call, not a 409', async () => {
    const seeds: Attempt[] = [];
    await expect(
      idempotent(p, scope('k2'), { a: 1 }, async (attempt) => {
        seeds.push(attempt);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    const other = await idempotent(p, scope('k2'), { a: 2 }, async (attempt) => {
      seeds.push(attempt);
      return 'ok';
    });
    expect(other.response).toBe('ok');
    expect(seeds[1].resumed).toBe(false);
    expect(seeds[1].seed).not.toBe(seeds[0].seed);
  });
});
