import { AsyncLocalStorage } from 'node:async_hooks';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EmbeddedActorHost } from '../../adapters/embedded/actor-host.ts';
import type { SqliteStore } from '../../adapters/sqlite/store.ts';
import { committedRows, openStore } from '../harness/store.ts';
import { AppError } from '../../domain/errors.ts';
import type { ActorDefinition } from '../../ports/actors.ts';

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A promise with its resolve function, for gating handlers without timing assumptions. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

type Fired = { id: string; name: string; payload: unknown; at: number };

describe('EmbeddedActorHost', () => {
  let dir: string;
  let store: SqliteStore;
  const hosts: EmbeddedActorHost[] = [];
  let fired: Fired[];
  let failuresLeft: Map<string, number>;

  const counter: ActorDefinition<{ n: number }> = {
    type: 'counter',
    methods: {
      async inc(ctx, by: number = 1) {
        const s = (await ctx.loadState()) ?? { n: 0 };
        await sleep(1);
        s.n += by;
        await ctx.saveState(s);
        return s.n;
      },
      async get(ctx) {
        return (await ctx.loadState())?.n ?? 0;
      },
      async reset(ctx) {
        await ctx.deleteState();
      },
    },
  };

  const timer: ActorDefinition<unknown> = {
    type: 'timer',
    methods: {
      async set(ctx, input: { name: string; inMs?: number; at?: string; payload?: unknown }) {
        const due = input.at ? new Date(input.at) : new Date(Date.now() + (input.inMs ?? 0));
        await ctx.setReminder(input.name, due, input.payload);
        return due.getTime();
      },
      async remove(ctx, name: string) {
        await ctx.deleteReminder(name);
      },
    },
    async onReminder(ctx, name, payload) {
      fired.push({ id: ctx.id, name, payload, at: Date.now() });
      const left = failuresLeft.get(name) ?? 0;
      if (left > 0) {
        failuresLeft.set(name, left - 1);
        throw new Error(`planned failure of ${name}`);
      }
      const p = payload as { again?: number } | undefined;
      if (p && typeof p.again === 'number' && p.again > 0) {
        await ctx.setReminder(name, new Date(Date.now() + 10), { again: p.again - 1 });
      }
    },
  };

  async function newHost(options?: ConstructorParameters<typeof EmbeddedActorHost>[1]) {
    const host = new EmbeddedActorHost(store, options);
    host.register(counter);
    host.register(timer);
    hosts.push(host);
    return host;
  }

  async function restartStore() {
    for (const h of hosts.splice(0)) await h.stop();
    await store.close();
    store = await openStore(dir);
  }

  const reminders = () => store.collection('_actor_reminders');

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'mailroom-actors-'));
    store = await openStore(dir);
    fired = [];
    failuresLeft = new Map();
    vi.spyOn(console, 'error').mockImplementation(() => {});
  });

  afterEach(async () => {
    for (const h of hosts.splice(0)) await h.stop();
    await store.close().catch(() => {});
    await fs.rm(dir, { recursive: true, force: true });
    vi.restoreAllMocks();
  });

  describe('turns', () => {
    it('runs a turn as one unit of a store that has units: its writes are committed together at its end', async () => {
      // Checked from a second connection, which sees only what is committed (as a restart after a crash would).
      const notes = store.collection('notes');
      await notes.insertOne({ _id: 'setup' }); // the table exists before the turn: creating it is a write of its own
      const other = committedRows(dir);
      const committed = () => other.ids('notes');
      const firstWritten = gate();
      const finish = gate();
      const host = await newHost();
      host.register({
        type: 'writer',
        methods: {
          async write() {
            await notes.insertOne({ _id: 'a' });
            firstWritten.open();
            await finish.opened;
            await notes.insertOne({ _id: 'b' });
          },
        },
      });
      await host.start();
      try {
        const turn = host.invoke('writer', 'w1', 'write');
        await firstWritten.opened;
        await sleep(100); // a write outside a unit is committed within a few ms
        const midTurn = committed();
        finish.open();
        await turn;
        expect(midTurn).toEqual(['setup']);
        expect(committed()).toEqual(['a', 'b', 'setup']);
      } finally {
        other.close();
      }
    });

    it('serializes turns per actor id, in arrival order', async () => {
      const host = await newHost();
      let inside = 0;
      let maxInside = 0;
      const order: number[] = [];
      host.register({
        type: 'probe',
        methods: {
          async run(_ctx, i: number) {
            inside++;
            maxInside = Math.max(maxInside, inside);
            await sleep(Math.floor(Math.random() * 3));
            await Promise.resolve();
            await sleep(0);
            order.push(i);
            inside--;
            return i * 2;
          },
        },
      });
      await host.start();
      const results = await Promise.all(Array.from({ length: 25 }, (_, i) => host.invoke('probe', 'same', 'run', i)));
      expect(results).toEqual(Array.from({ length: 25 }, (_, i) => i * 2));
      expect(maxInside).toBe(1);
      expect(order).toEqual(Array.from({ length: 25 }, (_, i) => i));
    });

    it('runs different actors concurrently', async () => {
      const host = await newHost();
      const ids = ['a', 'b', 'c', 'd', 'e'];
      const everyoneIn = gate();
      let entered = 0;
      host.register({
        type: 'barrier',
        methods: {
          async wait() {
            if (++entered === ids.length) everyoneIn.open();
            // Only returns once all five turns are inside at the same time.
            await everyoneIn.opened;
            return 'ok';
          },
        },
      });
      await host.start();
      const all = Promise.all(ids.map((id) => host.invoke('barrier', id, 'wait')));
      const timeout = sleep(10_000).then(() => 'timeout');
      expect(await Promise.race([all.then(() => 'done'), timeout])).toBe('done');
    });

    it("runs each turn in its caller's async context (e.g. request-scoped logging)", async () => {
      const host = await newHost();
      const request = new AsyncLocalStorage<string>();
      host.register({
        type: 'ctx',
        methods: {
          async whoAsked() {
            await sleep(1);
            return request.getStore();
          },
        },
      });
      await host.start();
      const asked = await Promise.all(
        ['r1', 'r2', 'r3'].map((r) => request.run(r, () => host.invoke('ctx', 'same', 'whoAsked'))),
      );
      expect(asked).toEqual(['r1', 'r2', 'r3']);
    });

    it('keeps the counter consistent under concurrent invocations', async () => {
      const host = await newHost();
      await host.start();
      await Promise.all(Array.from({ length: 30 }, () => host.invoke('counter', 'x', 'inc')));
      expect(await host.invoke('counter', 'x', 'get')).toBe(30);
    });

    it('passes errors thrown by a method to the caller unchanged', async () => {
      const host = await newHost();
      const boom = new AppError('CONFLICT', 'nope');
      host.register({
        type: 'thrower',
        methods: {
          async fail() {
            throw boom;
          },
        },
      });
      await host.start();
      await expect(host.invoke('thrower', '1', 'fail')).rejects.toBe(boom);
      // The actor is still usable after a failed turn.
      await expect(host.invoke('thrower', '1', 'fail')).rejects.toBe(boom);
    });

    it('rejects unknown types and methods with an Error', async () => {
      const host = await newHost();
      await host.start();
      await expect(host.invoke('nope', '1', 'get')).rejects.toThrow(/unknown actor type/);
      await expect(host.invoke('counter', '1', 'nope')).rejects.toThrow(/unknown method/);
      await expect(host.invoke('counter', '1', 'toString')).rejects.toThrow(/unknown method/);
    });

    it('throws instead of deadlocking on a reentrant call, directly or through another actor', async () => {
      const host = await newHost();
      host.register({
        type: 'loop',
        methods: {
          async self(ctx) {
            return host.invoke('loop', ctx.id, 'ping');
          },
          async viaOther(ctx) {
            return host.invoke('loop', 'other', 'callBack', ctx.id);
          },
          async callBack(_ctx, originId: string) {
            return host.invoke('loop', originId, 'ping');
          },
          async callOther() {
            return host.invoke('loop', 'other', 'ping');
          },
          async ping() {
            return 'pong';
          },
        },
      });
      await host.start();
      await expect(host.invoke('loop', 'a', 'self')).rejects.toThrow(/reentrant/);
      await expect(host.invoke('loop', 'a', 'viaOther')).rejects.toThrow(/reentrant/);
      // Calling another actor is fine, and the actor still works afterwards.
      expect(await host.invoke('loop', 'a', 'callOther')).toBe('pong');
      expect(await host.invoke('loop', 'a', 'ping')).toBe('pong');
    });

    it('lets a background task started by a finished turn call the same actor', async () => {
      const host = await newHost();
      let later: Promise<unknown> | undefined;
      host.register({
        type: 'bg',
        methods: {
          async spawn(ctx) {
            later = sleep(20).then(() => host.invoke('bg', ctx.id, 'ping'));
          },
          async ping() {
            return 'pong';
          },
        },
      });
      await host.start();
      await host.invoke('bg', '1', 'spawn');
      expect(await later).toBe('pong');
    });

    it('stop() waits for in-flight turns and refuses new invocations', async () => {
      const host = await newHost();
      const release = gate();
      let finished = false;
      host.register({
        type: 'slow',
        methods: {
          async run() {
            await release.opened;
            finished = true;
          },
        },
      });
      await host.start();
      const running = host.invoke('slow', '1', 'run');
      await sleep(10);
      const stopped = host.stop();
      setTimeout(release.open, 30);
      await stopped;
      expect(finished).toBe(true);
      await running;
      await expect(host.invoke('slow', '1', 'run')).rejects.toThrow(/stopped/);
    });
  });

  describe('state', () => {
    it('persists state in _actor_state and across a new host on the reopened store', async () => {
      const host = await newHost();
      await host.start();
      await host.invoke('counter', 'c1', 'inc', 2);
      await host.invoke('counter', 'c1', 'inc', 3);
      expect(await store.collection('_actor_state').findOne({ _id: 'counter/c1' })).toEqual({
        _id: 'counter/c1',
        type: 'counter',
        id: 'c1',
        state: { n: 5 },
      });

      await restartStore();
      const host2 = await newHost();
      await host2.start();
      expect(await host2.invoke('counter', 'c1', 'get')).toBe(5);
      expect(await host2.invoke('counter', 'c1', 'inc')).toBe(6);
      expect(await host2.invoke('counter', 'other', 'get')).toBe(0);
    });

    it('deleteState removes the record and the actor behaves as new', async () => {
      const host = await newHost();
      await host.start();
      await host.invoke('counter', 'd', 'inc', 4);
      await host.invoke('counter', 'd', 'reset');
      expect(await store.collection('_actor_state').countDocuments({ _id: 'counter/d' })).toBe(0);
      expect(await host.invoke('counter', 'd', 'get')).toBe(0);
    });

    it('does not keep unsaved mutations of loaded state', async () => {
      const host = await newHost();
      host.register<{ n: number }>({
        type: 'mutator',
        methods: {
          async save(ctx, n: number) {
            await ctx.saveState({ n });
          },
          async mutateThenFail(ctx) {
            const s = (await ctx.loadState())!;
            s.n = 999;
            throw new Error('validation failed');
          },
          async get(ctx) {
            return (await ctx.loadState())?.n;
          },
        },
      });
      await host.start();
      await host.invoke('mutator', 'm', 'save', 1);
      await expect(host.invoke('mutator', 'm', 'mutateThenFail')).rejects.toThrow('validation failed');
      expect(await host.invoke('mutator', 'm', 'get')).toBe(1);
    });

    it('deactivates an idle actor, dropping its cache; state reloads from the store', async () => {
      const host = await newHost({ idleMs: 50 });
      await host.start();
      await host.invoke('counter', 'idle', 'inc', 1);
      expect(host.activeActors).toBe(1);
      // Change the record behind the host's back: while active, the cached value is used...
      await store.collection('_actor_state').updateOne({ _id: 'counter/idle' }, { $set: { 'state.n': 41 } });
      expect(await host.invoke('counter', 'idle', 'get')).toBe(1);
      // ...after deactivation the state is read from the store again.
      await waitFor(() => host.activeActors === 0, 5_000, 'deactivation');
      expect(await host.invoke('counter', 'idle', 'get')).toBe(41);
      expect(await host.invoke('counter', 'idle', 'inc')).toBe(42);
    });

    it('keeps at most `maxIdle` idle actors, dropping the longest idle first', async () => {
      const host = await newHost({ maxIdle: 2 });
      await host.start();
      for (const id of ['a', 'b', 'c']) await host.invoke('counter', id, 'inc', 1);
      expect(host.activeActors).toBe(2);
      // b is used again, so a and then c are the longest idle: d drops c, and a is gone already.
      await host.invoke('counter', 'b', 'get');
      await host.invoke('counter', 'd', 'inc', 1);
      expect(host.activeActors).toBe(2);
      for (const id of ['a', 'b', 'c']) await store.collection('_actor_state').updateOne({ _id: `counter/${id}` }, { $set: { 'state.n': 41 } });
      // b kept its cached state; a and c read theirs from the store again.
      expect(await host.invoke('counter', 'b', 'get')).toBe(1);
      expect(await host.invoke('counter', 'a', 'get')).toBe(41);
      expect(await host.invoke('counter', 'c', 'get')).toBe(41);
    });

    it('rejects use of the context after the turn ended', async () => {
      const host = await newHost();
      let leaked: any;
      host.register({
        type: 'leak',
        methods: {
          async grab(ctx) {
            leaked = ctx;
          },
        },
      });
      await host.start();
      await host.invoke('leak', '1', 'grab');
      await expect(leaked.saveState({})).rejects.toThrow(/after the turn/);
    });
  });

  describe('reminders', () => {
    it('fires at about its due time with its payload, then deletes the record', async () => {
      const host = await newHost();
      await host.start();
      const due = await host.invoke<number>('timer', 't1', 'set', { name: 'ping', inMs: 100, payload: { hello: 'world' } });
      expect(await reminders().findOne({ _id: 'timer/t1/ping' })).toEqual({
        _id: 'timer/t1/ping',
        type: 'timer',
        id: 't1',
        name: 'ping',
        dueAt: new Date(due).toISOString(),
        payload: { hello: 'world' },
      });
      await waitFor(() => fired.length === 1, 10_000, 'reminder');
      expect(fired[0]).toMatchObject({ id: 't1', name: 'ping', payload: { hello: 'world' } });
      expect(fired[0].at).toBeGreaterThanOrEqual(due);
      expect(fired[0].at).toBeLessThan(due + 5_000);
      await waitFor(async () => (await reminders().countDocuments({})) === 0, 5_000, 'record deletion');
      expect(host.scheduledReminders).toBe(0);
    });

    it('keeps reminders across a restart and fires them after start()', async () => {
      const host = await newHost();
      await host.start();
      const due = await host.invoke<number>('timer', 'r', 'set', { name: 'later', inMs: 300, payload: 7 });
      await host.stop();
      await restartStore();
      expect(await reminders().countDocuments({})).toBe(1);
      expect(fired).toHaveLength(0);

      const host2 = await newHost();
      await host2.start();
      await waitFor(() => fired.length === 1, 10_000, 'reminder after restart');
      expect(fired[0]).toMatchObject({ id: 'r', name: 'later', payload: 7 });
      expect(fired[0].at).toBeGreaterThanOrEqual(due);
    });

    it('fires overdue reminders right away at start, including ones written to the store directly', async () => {
      await reminders().insertOne({
        _id: 'timer/o1/overdue',
        type: 'timer',
        id: 'o1',
        name: 'overdue',
        dueAt: new Date(Date.now() - 60_000).toISOString(),
        payload: 'late',
      });
      const host = await newHost();
      // Set before start: persisted, scheduled once started.
      await host.invoke('timer', 'o2', 'set', { name: 'pre', at: new Date(Date.now() - 1_000).toISOString() });
      await sleep(50);
      expect(fired).toHaveLength(0);
      await host.start();
      await waitFor(() => fired.length === 2, 10_000, 'overdue reminders');
      expect(fired.map((f) => `${f.id}/${f.name}`).sort()).toEqual(['o1/overdue', 'o2/pre']);
      expect(fired.find((f) => f.id === 'o1')?.payload).toBe('late');
    });

    it('replaces a reminder set again with the same name', async () => {
      const host = await newHost();
      await host.start();
      await host.invoke('timer', 'x', 'set', { name: 'r', inMs: 60, payload: 1 });
      await host.invoke('timer', 'x', 'set', { name: 'r', inMs: 150, payload: 2 });
      // An earlier replacement is honoured too.
      await host.invoke('timer', 'y', 'set', { name: 'r', inMs: 60_000, payload: 'old' });
      await host.invoke('timer', 'y', 'set', { name: 'r', inMs: 50, payload: 'new' });
      await waitFor(() => fired.length >= 2, 10_000, 'replaced reminders');
      await sleep(250);
      expect(fired.filter((f) => f.id === 'x').map((f) => f.payload)).toEqual([2]);
      expect(fired.filter((f) => f.id === 'y').map((f) => f.payload)).toEqual(['new']);
    });

    it('retries a throwing reminder with backoff until it succeeds', async () => {
      const host = await newHost({ reminderBackoffMs: 20, reminderMaxBackoffMs: 100 });
      await host.start();
      failuresLeft.set('flaky', 2);
      await host.invoke('timer', 'f', 'set', { name: 'flaky', inMs: 10, payload: 'p' });
      await waitFor(() => fired.length === 3, 10_000, 'three attempts');
      expect(fired.map((f) => f.payload)).toEqual(['p', 'p', 'p']);
      // Backoff: the second retry waits at least twice the base.
      expect(fired[1].at - fired[0].at).toBeGreaterThanOrEqual(19);
      expect(fired[2].at - fired[1].at).toBeGreaterThanOrEqual(39);
      await waitFor(async () => (await reminders().countDocuments({})) === 0, 5_000, 'record deletion');
      await sleep(100);
      expect(fired).toHaveLength(3);
    });

    it('keeps a reminder that the handler set again, and fires it again', async () => {
      const host = await newHost();
      await host.start();
      await host.invoke('timer', 'rec', 'set', { name: 'tick', inMs: 10, payload: { again: 2 } });
      await waitFor(() => fired.length === 3, 10_000, 'recurring reminder');
      expect(fired.map((f) => (f.payload as { again: number }).again)).toEqual([2, 1, 0]);
      await waitFor(async () => (await reminders().countDocuments({})) === 0, 5_000, 'record deletion');
    });

    it('deleteReminder prevents firing', async () => {
      const host = await newHost();
      await host.start();
      await host.invoke('timer', 'd', 'set', { name: 'gone', inMs: 80 });
      await host.invoke('timer', 'd', 'remove', 'gone');
      expect(await reminders().countDocuments({})).toBe(0);
      await sleep(300);
      expect(fired).toHaveLength(0);
    });

    it('does not fire before stop() nor after it; keeps the record', async () => {
      const host = await newHost();
      await host.start();
      await host.invoke('timer', 's', 'set', { name: 'paused', inMs: 100 });
      await host.stop();
      await sleep(250);
      expect(fired).toHaveLength(0);
      expect(await reminders().countDocuments({})).toBe(1);
    });

    it('handles due times beyond the setTimeout limit (~24.8 days)', async () => {
      const host = await newHost();
      await host.start();
      await host.invoke('timer', 'far', 'set', { name: 'far', inMs: 40 * 24 * 3600 * 1000 });
      await host.invoke('timer', 'near', 'set', { name: 'near', inMs: 30 });
      await waitFor(() => fired.length === 1, 10_000, 'near reminder');
      await sleep(100);
      expect(fired.map((f) => f.id)).toEqual(['near']);
      expect(host.pendingReminders()).toBe(1);
      expect(host.scheduledReminders).toBe(0); // 40 days ahead: it waits in the store, not in memory
    });

    it('rejects reminder names with "/" and reminders on types without onReminder', async () => {
      const host = await newHost();
      host.register({
        type: 'plain',
        methods: {
          async set(ctx) {
            await ctx.setReminder('x', new Date());
          },
        },
      });
      await host.start();
      await expect(host.invoke('timer', 'n', 'set', { name: 'a/b', inMs: 10 })).rejects.toThrow(/invalid reminder name/);
      await expect(host.invoke('plain', 'n', 'set')).rejects.toThrow(/no onReminder/);
    });

    it('loads many persisted reminders at start and fires the due ones', async () => {
      const n = 20_000;
      const far = new Date(Date.now() + 3_600_000).toISOString();
      const docs = Array.from({ length: n }, (_, i) => ({
        _id: `timer/bulk${i}/wait`,
        type: 'timer',
        id: `bulk${i}`,
        name: 'wait',
        dueAt: i < 50 ? new Date(Date.now() - 1000).toISOString() : far,
        payload: i,
      }));
      await reminders().insertMany(docs);
      const host = await newHost();
      await host.start();
      await waitFor(() => fired.length === 50, 20_000, 'due bulk reminders');
      await waitFor(() => host.pendingReminders() === n - 50, 5_000, 'fired records deleted');
      expect(host.scheduledReminders).toBe(0); // an hour ahead: not in memory yet
      expect(new Set(fired.map((f) => f.payload)).size).toBe(50);
    });

    it('keeps in memory only the reminders of the window, a page at a time, and fires every one', async () => {
      const n = 250;
      const soon = Date.now() + 300;
      const docs = Array.from({ length: n }, (_, i) => ({
        _id: `timer/w${String(i).padStart(3, '0')}/wait`,
        type: 'timer',
        id: `w${i}`,
        name: 'wait',
        // 100 overdue (a backlog bigger than a page), 100 due in the window, 50 beyond it.
        dueAt: new Date(i < 100 ? Date.now() - 1000 : i < 200 ? soon : Date.now() + 1_400).toISOString(),
        payload: i,
      }));
      await reminders().insertMany(docs);
      const host = await newHost({ reminderWindowMs: 1_000, reminderPageSize: 40 });
      await host.start();
      expect(host.scheduledReminders).toBeLessThanOrEqual(40);
      let most = 0;
      const watch = setInterval(() => (most = Math.max(most, host.scheduledReminders)), 5);
      try {
        await waitFor(() => fired.length === 200, 20_000, 'overdue and in-window reminders');
        // Set while running: one inside the window, one beyond it.
        await host.invoke('timer', 'late1', 'set', { name: 'late', inMs: 200 });
        await host.invoke('timer', 'late2', 'set', { name: 'late', inMs: 1_500 });
        await waitFor(() => fired.length === n + 2, 20_000, 'every reminder');
      } finally {
        clearInterval(watch);
      }
      expect(new Set(fired.map((f) => `${f.id}/${f.name}`)).size).toBe(n + 2);
      expect(most).toBeLessThanOrEqual(40 + 2);
      await waitFor(() => host.pendingReminders() === 0, 5_000, 'every record deleted');
      expect(await reminders().countDocuments({})).toBe(0);
    });
  });
});
