import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../adapters/sqlite/store.ts';
import { committedRows } from '../harness/store.ts';

// An actor turn runs as a unit of the SQLite store: what it writes is committed together, so a
// crash keeps all of a turn or none of it. Checked from a second connection, which sees only
// what is committed (as a process restarted after a crash would).

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let dir: string;
let store: SqliteStore;
let other: ReturnType<typeof committedRows>;

const committed = (table: string): string[] => other.ids(table);

beforeEach(async () => {
  dir = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'mailroom-units-'));
  store = await SqliteStore.open(path.join(dir, 'mailroom.db'), { maxUnitMs: 400 });
  // Tables exist before the units start: creating one is a write of its own.
  for (const name of ['state', 'events', '_pubsub', 'elsewhere']) store.collection(name);
  await store.collection('elsewhere').insertOne({ _id: 'setup' });
  other = committedRows(dir);
});

afterEach(async () => {
  other.close();
  await store.close().catch(() => undefined);
  await fs.promises.rm(dir, { recursive: true, force: true });
});

describe('units (actor turns) of the SQLite store', () => {
  it("commits a turn's writes together, however many event-loop turns it spans, and resolves once they are durable", async () => {
    let seenMidTurn: string[][] = [];
    const done = store.unit(async () => {
      await store.collection('state').insertOne({ _id: 's1' }); // resolves at once inside a unit
      await sleep(30); // commits are due meanwhile: none may happen
      seenMidTurn.push(committed('state'));
      await store.collection('events').insertOne({ _id: 'e1' });
      await sleep(30);
      seenMidTurn.push(committed('events'));
      await store.collection('_pubsub').insertOne({ _id: 'm1' });
      return 'result';
    });
    expect(await done).toBe('result');
    expect(seenMidTurn).toEqual([[], []]);
    expect([committed('state'), committed('events'), committed('_pubsub')]).toEqual([['s1'], ['e1'], ['m1']]);
  });

  it('lets a write outside any unit wait for the open units, and a unit started meanwhile wait at the gate', async () => {
    const order: string[] = [];
    const first = store.unit(async () => {
      await store.collection('state').insertOne({ _id: 'a1' });
      await sleep(60);
      await store.collection('state').insertOne({ _id: 'a2' });
      order.push('first ends');
    });
    await sleep(5); // the commit of a1 is due and waits for `first`
    const outside = store
      .collection('elsewhere')
      .insertOne({ _id: 'x' })
      .then(() => order.push('outside durable'));
    const second = store.unit(async () => {
      order.push(`second starts, state committed: ${committed('state').join(',')}`);
      await store.collection('state').insertOne({ _id: 'b1' });
    });
    await Promise.all([first, outside, second]);
    // The outside write shared the commit of `first` (its fsync may finish after `second` began).
    expect(order.slice(0, 2)).toEqual(['first ends', 'second starts, state committed: a1,a2']);
    expect(order).toContain('outside durable');
    expect(committed('state')).toEqual(['a1', 'a2', 'b1']);
  });

  it('makes a turn called from a turn part of its unit', async () => {
    let seen: string[] = ['not read'];
    await store.unit(async () => {
      await store.collection('state').insertOne({ _id: 'outer' });
      await store.unit(async () => {
        await store.collection('events').insertOne({ _id: 'inner' });
        await sleep(30);
      });
      seen = committed('events'); // the inner unit ending commits nothing
    });
    expect(seen).toEqual([]);
    expect(committed('events')).toEqual(['inner']);
  });

  it('commits a unit still open after maxUnitMs in parts, and waits for it no more', async () => {
    let seen: string[] = [];
    const slow = store.unit(async () => {
      await store.collection('state').insertOne({ _id: 'before' });
      await sleep(700); // a webhook that takes its time
      seen = committed('state');
      await store.collection('state').insertOne({ _id: 'after' });
    });
    await sleep(10);
    const started = Date.now();
    await store.unit(async () => store.collection('events').insertOne({ _id: 'quick' }));
    expect(Date.now() - started).toBeLessThan(600); // the gate once (400 ms), not again for its own commit
    const again = Date.now();
    await store.unit(async () => store.collection('events').insertOne({ _id: 'quicker' }));
    expect(Date.now() - again).toBeLessThan(100);
    await slow;
    expect(seen).toEqual(['before']);
    expect(committed('state')).toEqual(['after', 'before']);
  });
});
