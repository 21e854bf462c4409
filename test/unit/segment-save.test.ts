// A segment whose condition the store cannot count must not be saved: saved, it would fail every
// list of the project's segments from then on (GET /segments counts each one).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { segments } from '../../domain/segments/collection.ts';
import { createSegment, patchSegment } from '../../domain/segments/service.ts';
import type { DocumentStore } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** The embedded platform, with counts of contacts that fail while `failing.on` (a defect in a count, or the store refusing it). */
async function platform(failing: { on: boolean }): Promise<Platform> {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-segment-'));
  const store = await openStore(dir);
  cleanups.push(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  const faulty = override(store, {
    collection: (name: string) => {
      const collection = store.collection(name);
      if (name !== 'contacts') return collection;
      return override(collection, {
        countDocuments: (filter: never) => (failing.on ? Promise.reject(new TypeError('the count broke')) : collection.countDocuments(filter)),
      });
    },
  } as Partial<DocumentStore>);
  return { ...embeddedPlatform(store), store: faulty };
}

/** `target` with some methods replaced; the others called on `target` itself (it has private fields). */
function override<T extends object>(target: T, methods: Partial<T>): T {
  return new Proxy(target, {
    get(t, key) {
      if (key in methods) return methods[key as keyof T];
      const value = Reflect.get(t, key, t);
      return typeof value === 'function' ? value.bind(t) : value;
    },
  });
}

const condition = (value: string) => ({ logic: 'AND', groups: [{ filters: [{ field: 'data.plan', operator: 'equals', value }] }] });

it('a segment whose count fails is not saved, and a condition whose count fails does not replace the saved one', async () => {
  const failing = { on: true };
  const p = await platform(failing);

  await expect(createSegment(p, 'p1', { name: 'Pro', type: 'DYNAMIC', condition: condition('pro'), trackMembership: false } as never)).rejects.toThrow('the count broke');
  expect(await segments(p.store).countDocuments({ projectId: 'p1' })).toBe(0);

  failing.on = false;
  const saved = await createSegment(p, 'p1', { name: 'Pro', type: 'DYNAMIC', condition: condition('pro'), trackMembership: false } as never);
  failing.on = true;
  await expect(patchSegment(p, 'p1', saved.id, { condition: condition('team') } as never)).rejects.toThrow('the count broke');
  expect((await segments(p.store).findOne({ _id: saved.id }))?.condition).toEqual(condition('pro'));
});
