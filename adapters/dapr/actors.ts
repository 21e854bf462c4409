/**
 * Dapr virtual actors behind the ActorRuntime port. Each ActorDefinition becomes a class named
 * exactly as its type (Dapr routes by class name), with one method per definition method.
 * Results and AppErrors cross the sidecar as a JSON reply envelope, so a 404 thrown in an actor
 * reaches the API as the same 404 instead of a generic 500.
 */
import { AbstractActor, ActorId, ActorProxyBuilder, Temporal, type DaprClient, type DaprServer } from '@dapr/dapr';
import { AppError } from '../../domain/errors.ts';
import type { ActorContext, ActorDefinition, ActorRuntime } from '../../ports/actors.ts';

type Reply = { ok: unknown } | { error: Record<string, unknown> };

/** Method arguments travel wrapped: the SDK spreads a bare array argument into several. */
interface Call {
  input: unknown;
}

const STATE = 'state';

export class DaprActorRuntime implements ActorRuntime {
  readonly #client: DaprClient;
  readonly #server: DaprServer | undefined;
  readonly #definitions: ActorDefinition<any>[] = [];
  readonly #proxies = new Map<string, ActorProxyBuilder<any>>();

  /** Without a server this process only calls actors (the mailer); with one it hosts them. */
  constructor(client: DaprClient, server?: DaprServer) {
    this.#client = client;
    this.#server = server;
  }

  register<S>(definition: ActorDefinition<S>): void {
    if (!this.#server) throw new Error('this process does not host actors');
    this.#definitions.push(definition);
  }

  async invoke<R = unknown>(type: string, id: string, method: string, input?: unknown): Promise<R> {
    let builder = this.#proxies.get(type);
    if (!builder) {
      builder = new ActorProxyBuilder(namedClass(type, class {}), this.#client);
      this.#proxies.set(type, builder);
    }
    const proxy = builder.build(new ActorId(id)) as Record<string, (call: Call) => Promise<Reply>>;
    const reply = await proxy[method]({ input });
    if (reply && typeof reply === 'object' && 'error' in reply) {
      throw AppError.fromJSON(reply.error) ?? new Error(String(reply.error.message ?? 'actor call failed'));
    }
    return (reply as { ok: R }).ok;
  }

  async start(): Promise<void> {
    if (!this.#server) return;
    await this.#server.actor.init();
    for (const definition of this.#definitions) {
      await this.#server.actor.registerActor(actorClass(definition));
    }
  }

  async stop(): Promise<void> {}
}

function namedClass<C extends abstract new (...args: any[]) => any>(name: string, cls: C): C {
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}

function actorClass(definition: ActorDefinition<any>) {
  const cls = namedClass(definition.type, class extends AbstractActor {});
  const proto = cls.prototype as unknown as Record<string, unknown>;
  for (const [name, method] of Object.entries(definition.methods)) {
    proto[name] = async function (this: AbstractActor, call: Call): Promise<Reply> {
      try {
        return { ok: (await method(context(this, definition.type), call?.input)) ?? null };
      } catch (err) {
        if (err instanceof AppError) return { error: err.toJSON() };
        throw err;
      }
    };
  }
  proto.receiveReminder = async function (this: AbstractActor, data: unknown): Promise<void> {
    // The SDK hands over the reminder's data but not its name, so the data carries both.
    const { name, payload } = (typeof data === 'string' ? JSON.parse(data) : data) as { name: string; payload: unknown };
    await definition.onReminder?.(context(this, definition.type), name, payload);
  };
  return cls;
}

function context<S>(actor: AbstractActor, type: string): ActorContext<S> {
  const state = () => actor.getStateManager<S>();
  return {
    type,
    id: actor.getActorId().getId(),
    async loadState() {
      const [found, value] = await state().tryGetState(STATE);
      return found && value !== null ? value : undefined;
    },
    async saveState(value) {
      await state().setState(STATE, value);
      await state().saveState();
    },
    async deleteState() {
      await state().tryRemoveState(STATE);
      await state().saveState();
    },
    async setReminder(name, dueAt, payload) {
      await actor.registerActorReminder(name, dueIn(dueAt), undefined, undefined, JSON.stringify({ name, payload: payload ?? null }));
    },
    async deleteReminder(name) {
      await actor.unregisterActorReminder(name);
    },
  };
}

/**
 * The SDK sends a duration as its ISO string with "PT" cut off ("90.5s"), which the sidecar
 * reads as a Go duration; that only works without days, so express it in seconds alone.
 */
function dueIn(dueAt: Date): Temporal.Duration {
  const ms = Math.max(0, dueAt.getTime() - Date.now());
  return Temporal.Duration.from({ seconds: Math.floor(ms / 1000), milliseconds: ms % 1000 });
}
