/**
 * The embedded actor runtime: virtual actors hosted in this process, persisting to the
 * document store.
 *
 * Turns: one at a time per (type, id), in arrival order (a FIFO per actor); different actors run
 * concurrently. A turn that calls, directly or through other actors, an actor whose turn is still
 * running further up its own call chain would wait for itself forever; that is detected with
 * AsyncLocalStorage and rejected with an Error instead. Each turn runs in its caller's async
 * context (so request-scoped AsyncLocalStorage, e.g. for logging, is visible inside); reminder
 * turns run in an empty one, with only the request id that set the reminder current. Inputs, results and errors are passed by reference, not serialized
 * (unlike Dapr): an error reaches the caller as the very object thrown.
 *
 * State: collection `_actor_state`, `{ _id: "<type>/<id>", type, id, state }`. `saveState` writes
 * through (durable when it resolves); the host caches the state while the actor is active and
 * drops the activation after `idleMs` without a turn, or sooner, oldest first, once more than
 * `maxIdle` are idle (a campaign touches every contact of its audience once: at 1,200 emails/s,
 * 60 s of idle contacts held 75 MiB). State is not rolled back: what a turn
 * saved stays saved even if the turn throws afterwards. With the `unit` option (the SQLite
 * store's), a turn's writes are committed together, so a crash keeps all of a turn or none of it.
 * `loadState` hands out a copy, so mutating it without `saveState` changes nothing.
 *
 * Reminders: one-shot, collection `_actor_reminders`,
 * `{ _id: "<type>/<id>/<name>", type, id, name, dueAt (ISO), payload, requestId? }`, indexed by
 * `dueAt`. Only the reminders due within the next `reminderWindowMs` (and at most
 * `reminderPageSize` of them at a time) are scheduled in memory, by one timer over a keyed
 * min-heap (see timer-queue.ts); the window moves on by an indexed range query, so memory does not
 * grow with the number of reminders waiting further ahead. A due reminder runs `onReminder` as a
 * turn of its actor; the record is deleted afterwards unless the handler set the same name
 * again; a handler that throws is retried with exponential backoff (1 s, 2 s, ... 60 s by
 * default) for as long as it takes. The attempt count lives in memory only, so a restart retries
 * at once. Reminder names and type names must not contain "/" (so record ids stay unambiguous);
 * actor ids may.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ActorContext, ActorDefinition, ActorRuntime } from '../../ports/actors.ts';
import { currentRequestId, withRequestId } from '../../runtime/request-context.ts';
import { inUnit, type Collection, type DocumentStore, type Filter } from '../../ports/store.ts';
import { TimerQueue, runDetached } from './timer-queue.ts';
import { copyJson } from './json.ts';

export const ACTOR_STATE_COLLECTION = '_actor_state';
export const ACTOR_REMINDERS_COLLECTION = '_actor_reminders';

export type ActorStateRecord = { _id: string; type: string; id: string; state: unknown };
export type ActorReminderRecord = {
  _id: string;
  type: string;
  id: string;
  name: string;
  dueAt: string;
  payload: unknown;
  /** The request whose work set the reminder; current again when it fires. */
  requestId?: string;
};

export interface EmbeddedActorHostOptions {
  /** Drop an actor's cached state and bookkeeping after this long without a turn (default 60 s). */
  idleMs?: number;
  /** Idle activations kept at most; beyond, the longest idle is dropped (default 10,000). */
  maxIdle?: number;
  /** First retry delay of a reminder whose handler threw (default 1000 ms); doubles per attempt. */
  reminderBackoffMs?: number;
  /** Cap on the reminder retry delay (default 60 s). */
  reminderMaxBackoffMs?: number;
  /**
   * How many due reminders may be firing at once (default 256), so 100k overdue ones don't
   * stampede. A turn now lasts until its commit is fsynced (a few ms), so the bound is what sets
   * the wake-up rate: at 64, 100k reminders due within 22 s woke at 4.2k/s, 2-3 s late.
   */
  reminderConcurrency?: number;
  /** How far ahead reminders are scheduled in memory (default 60 s); later ones wait in the store. */
  reminderWindowMs?: number;
  /** Reminders read from the store per query (default 10,000), so an overdue backlog is paged. */
  reminderPageSize?: number;
}

/** Where loading reminders from the store stands: every reminder before `at` (in (dueAt, _id) order) is scheduled. */
interface LoadedTo {
  dueAt: string;
  id: string;
}

type AnyDefinition = ActorDefinition<any>;

/** One turn on the call chain; `parent` is the turn that made the call (if any). */
interface Frame {
  readonly key: string;
  readonly parent: Frame | undefined;
  active: boolean;
}

interface Turn {
  readonly frame: Frame;
  /** Runs a function in the async context of whoever asked for this turn. */
  readonly enter: <R>(fn: () => R) => R;
  readonly work: (ctx: ActorContext<unknown>, turn: Turn) => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
  /** Reminder names set during this turn. */
  setNames?: Set<string>;
}

interface Activation {
  readonly key: string;
  readonly type: string;
  readonly id: string;
  queue: (Turn | undefined)[];
  head: number;
  running: boolean;
  stateLoaded: boolean;
  state: unknown;
  /** When its last turn ended (Date.now()), while it is idle. */
  idleSince: number;
}

export class EmbeddedActorHost implements ActorRuntime {
  readonly #store: DocumentStore;
  readonly #idleMs: number;
  readonly #backoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #reminderConcurrency: number;
  readonly #definitions = new Map<string, AnyDefinition>();
  readonly #actors = new Map<string, Activation>();
  /** The idle activations, longest idle first; one timer drops them (a timer each cost more than the activation). */
  readonly #idle = new Map<string, Activation>();
  readonly #maxIdle: number;
  #idleSweep: NodeJS.Timeout | undefined;
  readonly #calls = new AsyncLocalStorage<Frame>();
  /** Running turn loops, awaited by stop(). */
  readonly #pumps = new Set<Promise<void>>();
  readonly #reminders: TimerQueue;
  /** Failed attempts of reminders currently retrying (only those). */
  readonly #reminderFailures = new Map<string, number>();
  readonly #firing = new Set<Promise<void>>();
  readonly #windowMs: number;
  readonly #pageSize: number;
  /** Reminders up to this point are scheduled; undefined before the first load. */
  #loadedTo: LoadedTo | undefined;
  /** Due time (ms) up to which every stored reminder is scheduled in memory. */
  #horizon = -Infinity;
  /** The due time a load in progress is reading up to: a reminder set meanwhile is scheduled at once. */
  #loadingUntil = -Infinity;
  #loading: Promise<void> | undefined;
  #loadTimer: NodeJS.Timeout | undefined;
  /** Reminders in the store (for metrics), counted at start and kept by every write. */
  #stored = 0;
  readonly #skippedTypes = new Set<string>();
  #started = false;
  #stopping = false;

  constructor(store: DocumentStore, options: EmbeddedActorHostOptions = {}) {
    this.#store = store;
    this.#idleMs = positive(options.idleMs, 60_000, 'idleMs');
    this.#maxIdle = positive(options.maxIdle, 10_000, 'maxIdle');
    this.#backoffMs = positive(options.reminderBackoffMs, 1_000, 'reminderBackoffMs');
    this.#maxBackoffMs = positive(options.reminderMaxBackoffMs, 60_000, 'reminderMaxBackoffMs');
    this.#reminderConcurrency = positive(options.reminderConcurrency, 256, 'reminderConcurrency');
    this.#windowMs = positive(options.reminderWindowMs, 60_000, 'reminderWindowMs');
    this.#pageSize = positive(options.reminderPageSize, 10_000, 'reminderPageSize');
    this.#reminders = new TimerQueue(() => this.#fireDue());
  }

  register<S>(definition: ActorDefinition<S>): void {
    const { type } = definition;
    if (!type || type.includes('/')) throw new Error(`invalid actor type name: "${type}" (empty or contains "/")`);
    if (this.#definitions.has(type)) throw new Error(`actor type already registered: ${type}`);
    this.#definitions.set(type, definition as AnyDefinition);
  }

  async invoke<R = unknown>(type: string, id: string, method: string, input?: unknown): Promise<R> {
    const definition = this.#definitions.get(type);
    if (!definition) throw new Error(`unknown actor type: ${type}`);
    const fn = Object.hasOwn(definition.methods, method) ? definition.methods[method] : undefined;
    if (typeof fn !== 'function') throw new Error(`unknown method ${method} on actor type ${type}`);
    const key = stateKey(type, id);
    const caller = this.#calls.getStore();
    if (this.#stopping && !caller) throw new Error(`actor host is stopped; cannot invoke ${type}.${method}`);
    for (let f = caller; f; f = f.parent) {
      if (f.active && f.key === key) {
        throw new Error(
          `reentrant call to actor ${key} (${method}) from inside its own turn would deadlock; ` +
            'call the function directly instead of through the runtime',
        );
      }
    }
    const methods = definition.methods;
    const enter = AsyncLocalStorage.snapshot();
    // Inputs and results cross as JSON, as they do through a Dapr sidecar: code that works here
    // cannot lean on shared object references or on values JSON does not keep.
    const wire = jsonCopy(input);
    return jsonCopy(await this.#enqueue(type, id, caller, enter, (ctx) => fn.call(methods, ctx, wire))) as R;
  }

  async start(): Promise<void> {
    if (this.#started) return;
    this.#started = true;
    this.#stopping = false;
    try {
      await this.#store.ensureIndexes(ACTOR_REMINDERS_COLLECTION, [{ keys: { dueAt: 1 } }]);
      this.#stored = await this.#reminderCollection().countDocuments({});
      this.#loadedTo = undefined;
      this.#horizon = -Infinity;
      await this.#loadReminders();
    } catch (err) {
      this.#started = false;
      throw err;
    }
    this.#loadTimer = runDetached(() => setInterval(() => void this.#loadReminders(), Math.max(1, this.#windowMs / 4)));
    this.#loadTimer.unref();
    this.#reminders.resume();
    this.#fireDue();
  }

  /**
   * Schedules the stored reminders due before now + window that are not scheduled yet, one page
   * at a time in (dueAt, _id) order, while the heap has room for a page.
   */
  #loadReminders(): Promise<void> {
    if (!this.#loading) {
      const run = this.#loadPages();
      this.#loading = run;
      void run.finally(() => {
        if (this.#loading === run) this.#loading = undefined;
      });
    }
    return this.#loading;
  }

  async #loadPages(): Promise<void> {
    try {
      while (this.#reminders.size < this.#pageSize) {
        const until = new Date(Date.now() + this.#windowMs).toISOString();
        const after = this.#loadedTo;
        if (after && after.dueAt >= until) return;
        this.#loadingUntil = Date.parse(until);
        // A range on dueAt the index serves, in (dueAt, _id) order, after the last one read.
        const next: Filter = after
          ? { dueAt: { $gte: after.dueAt, $lt: until }, $or: [{ dueAt: { $gt: after.dueAt } }, { _id: { $gt: after.id } }] }
          : { dueAt: { $lt: until } };
        const room = this.#pageSize - this.#reminders.size;
        const page = await this.#reminderCollection().find(
          next,
          { sort: { dueAt: 1, _id: 1 }, limit: room, projection: { type: 1, dueAt: 1 } },
        );
        for (const rec of page) this.#schedule(rec);
        const last = page.at(-1);
        if (page.length < room || !last) {
          this.#loadedTo = { dueAt: until, id: '' };
          this.#horizon = Date.parse(until);
          return;
        }
        this.#loadedTo = { dueAt: last.dueAt, id: last._id };
        this.#horizon = Date.parse(last.dueAt);
      }
    } catch (err) {
      console.error('[actor-host] loading reminders failed; will try again:', err);
    } finally {
      this.#loadingUntil = -Infinity;
    }
  }

  /** Whether a reminder due at `due` belongs in memory now (else loading will find it later). */
  #inWindow(due: number): boolean {
    return due <= Math.max(this.#horizon, this.#loadingUntil);
  }

  #schedule(rec: Pick<ActorReminderRecord, '_id' | 'type' | 'dueAt'>): void {
    if (!this.#definitions.get(rec.type)?.onReminder) {
      if (!this.#skippedTypes.has(rec.type)) {
        this.#skippedTypes.add(rec.type);
        console.error(
          `[actor-host] persisted reminder(s) of actor type "${rec.type}" not scheduled: ` +
            'type not registered or has no onReminder (records kept)',
        );
      }
      return;
    }
    const due = Date.parse(rec.dueAt);
    // setIfAbsent: a setReminder that raced with this load already queued the newer time.
    this.#reminders.setIfAbsent(rec._id, Number.isFinite(due) ? due : 0);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#started = false;
    this.#reminders.pause();
    if (this.#loadTimer) clearInterval(this.#loadTimer);
    this.#loadTimer = undefined;
    await this.#loading;
    // Turns may enqueue more turns (calls between actors), so wait until everything is quiet.
    while (this.#pumps.size > 0 || this.#firing.size > 0) {
      await Promise.allSettled([...this.#pumps, ...this.#firing]);
    }
    this.#reminders.clear();
    this.#reminderFailures.clear();
    if (this.#idleSweep) clearTimeout(this.#idleSweep);
    this.#idleSweep = undefined;
    this.#idle.clear();
    this.#actors.clear();
  }

  /** Number of active (cached) actors; for tests and metrics. */
  get activeActors(): number {
    return this.#actors.size;
  }

  /** Number of reminders scheduled in memory (those due within the window); for tests. */
  get scheduledReminders(): number {
    return this.#reminders.size;
  }

  /** Every reminder set and not yet fired or deleted, in memory or waiting in the store. */
  pendingReminders(): number {
    return this.#stored;
  }

  // ---- turns ----------------------------------------------------------------------------

  #enqueue(
    type: string,
    id: string,
    caller: Frame | undefined,
    enter: <R>(fn: () => R) => R,
    work: (ctx: ActorContext<unknown>, turn: Turn) => Promise<unknown>,
  ): Promise<unknown> {
    const key = stateKey(type, id);
    let activation = this.#actors.get(key);
    if (!activation) {
      activation = {
        key,
        type,
        id,
        queue: [],
        head: 0,
        running: false,
        stateLoaded: false,
        state: undefined,
        idleSince: 0,
      };
      this.#actors.set(key, activation);
    }
    this.#idle.delete(key);
    const frame: Frame = { key, parent: caller, active: false };
    const promise = new Promise<unknown>((resolve, reject) => {
      activation.queue.push({ frame, enter, work, resolve, reject });
    });
    if (!activation.running) {
      activation.running = true;
      const pump = runDetached(() => this.#pump(activation));
      this.#pumps.add(pump);
      void pump.finally(() => this.#pumps.delete(pump));
    }
    return promise;
  }

  async #pump(activation: Activation): Promise<void> {
    try {
      while (activation.head < activation.queue.length) {
        const turn = activation.queue[activation.head] as Turn;
        activation.queue[activation.head++] = undefined;
        if (activation.head > 1024 && activation.head * 2 > activation.queue.length) {
          activation.queue = activation.queue.slice(activation.head);
          activation.head = 0;
        }
        const ctx = this.#context(activation, turn);
        turn.frame.active = true;
        try {
          // One unit of the store where it has them (SQLite): the turn's state, projections and
          // published messages commit together. Inside `enter`: a turn called from a turn is part
          // of its caller's unit.
          const result = await turn.enter(() => this.#calls.run(turn.frame, () => inUnit(this.#store, () => turn.work(ctx, turn))));
          turn.resolve(result);
        } catch (err) {
          turn.reject(err);
        } finally {
          turn.frame.active = false;
        }
      }
    } finally {
      activation.queue = [];
      activation.head = 0;
      activation.running = false;
      this.#becameIdle(activation);
    }
  }

  #becameIdle(activation: Activation): void {
    if (this.#stopping) return;
    activation.idleSince = Date.now();
    this.#idle.delete(activation.key);
    this.#idle.set(activation.key, activation);
    while (this.#idle.size > this.#maxIdle) this.#drop(this.#idle.values().next().value!);
    this.#sweepIdle();
  }

  /** Drops the activations idle for `idleMs`, then waits for the next one to be. */
  #sweepIdle(): void {
    if (this.#idleSweep) return;
    const now = Date.now();
    for (const activation of this.#idle.values()) {
      if (activation.idleSince + this.#idleMs > now) {
        this.#idleSweep = runDetached(() => setTimeout(() => {
          this.#idleSweep = undefined;
          this.#sweepIdle();
        }, activation.idleSince + this.#idleMs - now));
        this.#idleSweep.unref();
        return;
      }
      this.#drop(activation);
    }
  }

  #drop(activation: Activation): void {
    this.#idle.delete(activation.key);
    if (!activation.running && this.#actors.get(activation.key) === activation) this.#actors.delete(activation.key);
  }

  #context(activation: Activation, turn: Turn): ActorContext<unknown> {
    const { key, type, id } = activation;
    const check = (op: string) => {
      if (!turn.frame.active) throw new Error(`ActorContext.${op} used after the turn of ${key} ended`);
    };
    const states = () => this.#store.collection<ActorStateRecord>(ACTOR_STATE_COLLECTION);
    return {
      type,
      id,
      loadState: async () => {
        check('loadState');
        if (!activation.stateLoaded) {
          const doc = await states().findOne({ _id: key });
          activation.state = doc ? doc.state : undefined;
          activation.stateLoaded = true;
        }
        return copyJson(activation.state);
      },
      saveState: async (state: unknown) => {
        check('saveState');
        const snapshot = jsonCopy(state);
        activation.stateLoaded = false; // if the write fails, reload whatever the store has
        await states().replaceOne({ _id: key }, { _id: key, type, id, state: snapshot }, { upsert: true });
        activation.state = snapshot;
        activation.stateLoaded = true;
      },
      deleteState: async () => {
        check('deleteState');
        activation.stateLoaded = false;
        await states().deleteOne({ _id: key });
        activation.state = undefined;
        activation.stateLoaded = true;
      },
      setReminder: async (name: string, dueAt: Date, payload?: unknown) => {
        check('setReminder');
        checkReminderName(name);
        const definition = this.#definitions.get(type);
        if (!definition?.onReminder) throw new Error(`actor type ${type} has no onReminder; cannot set reminder ${name}`);
        const due = dueAt instanceof Date ? dueAt.getTime() : NaN;
        if (!Number.isFinite(due)) throw new Error(`invalid dueAt for reminder ${name} of ${key}`);
        const rid = reminderKey(type, id, name);
        const requestId = currentRequestId();
        const record: ActorReminderRecord = {
          _id: rid,
          type,
          id,
          name,
          dueAt: new Date(due).toISOString(),
          payload,
          ...(requestId ? { requestId } : {}),
        };
        const written = await this.#reminderCollection().replaceOne({ _id: rid }, record, { upsert: true });
        if (written.upsertedId !== undefined) this.#stored++;
        this.#reminderFailures.delete(rid);
        // Within the loaded window it is scheduled now; later, loading will find it in the store.
        if (this.#inWindow(due)) this.#reminders.set(rid, due);
        else this.#reminders.delete(rid);
        (turn.setNames ??= new Set()).add(name);
      },
      deleteReminder: async (name: string) => {
        check('deleteReminder');
        checkReminderName(name);
        const rid = reminderKey(type, id, name);
        const deleted = await this.#reminderCollection().deleteOne({ _id: rid });
        this.#stored -= deleted; // not `-= await`: that would read the count before the wait
        this.#reminders.delete(rid);
        this.#reminderFailures.delete(rid);
        turn.setNames?.delete(name);
      },
    };
  }

  // ---- reminders ------------------------------------------------------------------------

  #reminderCollection(): Collection<ActorReminderRecord> {
    return this.#store.collection<ActorReminderRecord>(ACTOR_REMINDERS_COLLECTION);
  }

  /** Starts due reminders while there is capacity; called by the timer and when one finishes. */
  #fireDue(): void {
    if (!this.#started) return;
    // More due within the window than a page holds (a backlog, or a burst due together): read the
    // next page once this one is half done, not at the next tick of the window.
    if (this.#reminders.size < this.#pageSize / 2 && this.#horizon < Date.now() + this.#windowMs / 2) void this.#loadReminders();
    while (this.#firing.size < this.#reminderConcurrency) {
      const rid = this.#reminders.takeDue();
      if (rid === undefined) return;
      const firing = runDetached(() => this.#fire(rid));
      this.#firing.add(firing);
      void firing.finally(() => {
        this.#firing.delete(firing);
        this.#fireDue();
      });
    }
  }

  async #fire(rid: string): Promise<void> {
    const first = rid.indexOf('/');
    const last = rid.lastIndexOf('/');
    const type = rid.slice(0, first);
    const id = rid.slice(first + 1, last);
    const name = rid.slice(last + 1);
    const definition = this.#definitions.get(type);
    if (!definition?.onReminder) return; // start() logged it; the record stays
    const onReminder = definition.onReminder;
    try {
      // Read the record inside the turn: earlier queued turns may have replaced or deleted it.
      await this.#enqueue(type, id, undefined, runDetached, async (ctx, turn) => {
        const rec = await this.#reminderCollection().findOne({ _id: rid });
        if (!rec) {
          this.#reminderFailures.delete(rid);
          return;
        }
        const due = Date.parse(rec.dueAt);
        if (due > Date.now()) {
          // Replaced by a later time after this firing was taken off the heap.
          if (this.#inWindow(due)) this.#reminders.setIfAbsent(rid, due);
          return;
        }
        try {
          await withRequestId(rec.requestId, () => onReminder.call(definition, ctx, name, rec.payload));
          if (!turn.setNames?.has(name)) {
            const deleted = await this.#reminderCollection().deleteOne({ _id: rid });
            this.#stored -= deleted;
            this.#reminders.delete(rid);
          }
          this.#reminderFailures.delete(rid);
        } catch (err) {
          if (turn.setNames?.has(name)) {
            // The handler rescheduled itself before failing: its new time stands.
            this.#reminderFailures.delete(rid);
            console.error(`[actor-host] reminder ${rid} failed after rescheduling itself:`, err);
            return;
          }
          const failures = (this.#reminderFailures.get(rid) ?? 0) + 1;
          this.#reminderFailures.set(rid, failures);
          const delay = Math.min(this.#backoffMs * 2 ** Math.min(failures - 1, 30), this.#maxBackoffMs);
          console.error(`[actor-host] reminder ${rid} failed (attempt ${failures}), retrying in ${delay} ms:`, err);
          if (this.#started) this.#reminders.setIfAbsent(rid, Date.now() + delay);
        }
      });
    } catch (err) {
      // The store failed around the handler (reading or deleting the record): try again later.
      const failures = (this.#reminderFailures.get(rid) ?? 0) + 1;
      this.#reminderFailures.set(rid, failures);
      const delay = Math.min(this.#backoffMs * 2 ** Math.min(failures - 1, 30), this.#maxBackoffMs);
      console.error(`[actor-host] reminder ${rid} could not be processed, retrying in ${delay} ms:`, err);
      if (this.#started) this.#reminders.setIfAbsent(rid, Date.now() + delay);
    }
  }
}

function stateKey(type: string, id: string): string {
  return `${type}/${id}`;
}

function reminderKey(type: string, id: string, name: string): string {
  return `${type}/${id}/${name}`;
}

function checkReminderName(name: string): void {
  if (typeof name !== 'string' || name.length === 0 || name.includes('/')) {
    throw new Error(`invalid reminder name: "${name}" (empty or contains "/")`);
  }
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!(value > 0) || !Number.isFinite(value)) throw new RangeError(`${name} must be a positive number`);
  return value;
}

/** What crossing a Dapr sidecar does to a value: a JSON round trip. */
function jsonCopy<T>(value: T): T {
  return value === undefined ? value : JSON.parse(JSON.stringify(value));
}
