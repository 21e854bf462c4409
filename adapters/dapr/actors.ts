/**
 * Dapr virtual actors behind the ActorRuntime port. Each ActorDefinition becomes a class named
 * exactly as its type (Dapr routes by class name), with one method per definition method.
 * Results and AppErrors cross the sidecar as a JSON reply envelope, so a 404 thrown in an actor
 * reaches the API as the same 404 instead of a generic 500.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { JobFailurePolicySchema } from '@dapr/dapr/proto/dapr/proto/common/v1/common_pb.js';
import { AbstractActor, ActorId, ActorProxyBuilder, type DaprClient, type DaprServer, type GRPCClient } from '@dapr/dapr';
import { RegisterActorReminderRequestSchema } from '@dapr/dapr/proto/dapr/proto/runtime/v1/dapr_pb.js';
import { AppError } from '../../domain/errors.ts';
import type { ActorContext, ActorDefinition, ActorRuntime } from '../../ports/actors.ts';
import { currentRequestId, withRequestId } from '../../runtime/request-context.ts';

type Reply = { ok: unknown } | { error: Record<string, unknown> };

/** Method arguments travel wrapped (the SDK spreads a bare array argument into several), with the caller's request id. */
interface Call {
  input: unknown;
  requestId?: string;
}

const STATE = 'state';

export class DaprActorRuntime implements ActorRuntime {
  readonly #client: DaprClient;
  readonly #server: DaprServer | undefined;
  readonly #definitions: ActorDefinition<any>[] = [];
  readonly #proxies = new Map<string, ActorProxyBuilder<any>>();

  readonly #grpc: GRPCClient | undefined;
  /** `type/id/name` of reminders this process set and has not seen fire or deleted. */
  readonly #reminders = new Set<string>();

  /**
   * Without a server this process only calls actors (the mailer); with one it hosts them, and
   * needs the sidecar's gRPC API for reminders (see `setReminder`).
   */
  constructor(client: DaprClient, server?: DaprServer, grpc?: GRPCClient) {
    this.#client = client;
    this.#server = server;
    this.#grpc = grpc;
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
    const requestId = currentRequestId();
    const reply = await proxy[method]({ input, ...(requestId ? { requestId } : {}) });
    if (reply && typeof reply === 'object' && 'error' in reply) {
      throw AppError.fromJSON(reply.error) ?? new Error(String(reply.error.message ?? 'actor call failed'));
    }
    return (reply as { ok: R }).ok;
  }

  pendingReminders(): number {
    return this.#reminders.size;
  }

  async start(): Promise<void> {
    if (!this.#server) return;
    await this.#server.actor.init();
    for (const definition of this.#definitions) {
      await this.#server.actor.registerActor(actorClass(definition, this.#grpc, this.#reminders));
    }
  }

  async stop(): Promise<void> {}
}

function namedClass<C extends abstract new (...args: any[]) => any>(name: string, cls: C): C {
  Object.defineProperty(cls, 'name', { value: name });
  return cls;
}

/** What an actor instance of the SDK talks to the sidecar through (see actorClass). */
interface SidecarClients {
  actorClient: unknown;
  daprStateProvider: unknown;
}

/**
 * The first actor's clients, which every later actor of this process reuses. The SDK makes a new
 * HTTP client for each actor it activates, and each new client asks the sidecar for its metadata
 * before its first request: one extra sidecar call per activation (a tracked event on a contact
 * not seen for a while), and one more connection.
 */
let sidecarClients: SidecarClients | undefined;

function actorClass(definition: ActorDefinition<any>, grpc: GRPCClient | undefined, reminders: Set<string>) {
  const cls = namedClass(
    definition.type,
    class extends AbstractActor {
      constructor(client: DaprClient, id: ActorId) {
        super(client, id);
        const own = this as unknown as SidecarClients;
        if (sidecarClients) Object.assign(own, sidecarClients);
        else sidecarClients = { actorClient: own.actorClient, daprStateProvider: own.daprStateProvider };
      }
    },
  );
  const proto = cls.prototype as unknown as Record<string, unknown>;
  for (const [name, method] of Object.entries(definition.methods)) {
    proto[name] = async function (this: AbstractActor, call: Call): Promise<Reply> {
      try {
        const ctx = context(this, definition.type, grpc, reminders);
        return { ok: (await withRequestId(call?.requestId, () => method(ctx, call?.input))) ?? null };
      } catch (err) {
        if (err instanceof AppError) return { error: err.toJSON() };
        throw err;
      }
    };
  }
  proto.receiveReminder = async function (this: AbstractActor, data: unknown): Promise<void> {
    // The SDK hands over the reminder's data but not its name, so the data carries both: JSON,
    // which the sidecar delivers base64-encoded since it was registered as gRPC bytes.
    const { name, payload, requestId } = JSON.parse(Buffer.from(String(data), 'base64').toString('utf8')) as {
      name: string;
      payload: unknown;
      requestId?: string;
    };
    // Fired unless the handler sets the same name again or fails (the sidecar then retries it).
    const key = `${definition.type}/${this.getActorId().getId()}/${name}`;
    reminders.delete(key);
    const ctx = context(this, definition.type, grpc, reminders);
    try {
      await withRequestId(requestId, () => definition.onReminder?.(ctx, name, payload));
    } catch (err) {
      reminders.add(key);
      throw err;
    }
  };
  return cls;
}

function context<S>(actor: AbstractActor, type: string, grpc: GRPCClient | undefined, reminders: Set<string>): ActorContext<S> {
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
      if (!grpc) throw new Error('reminders need the sidecar gRPC client');
      const client = await grpc.getClient();
      const request = create(RegisterActorReminderRequestSchema, {
        actorType: type,
        actorId: actor.getActorId().getId(),
        name,
        dueTime: dueIn(dueAt),
        data: Buffer.from(JSON.stringify({ name, payload: payload ?? null, requestId: currentRequestId() })),
      });
      request.$unknown = [RETRY_FOREVER]; // create() does not take unknown fields
      await client.registerActorReminder(request);
      reminders.add(`${type}/${actor.getActorId().getId()}/${name}`);
    },
    async deleteReminder(name) {
      await actor.unregisterActorReminder(name);
      reminders.delete(`${type}/${actor.getActorId().getId()}/${name}`);
    },
  };
}

/**
 * `failure_policy` (field 9 of RegisterActorReminderRequest): retry every second, forever.
 * Dapr's default drops a one-shot reminder after 3 failed tries a second apart, i.e. when its app
 * is down for a few seconds; a wake-up must survive any outage (Dapr's own workflow engine asks
 * for the same). The SDK's generated message predates the field, so it travels as an unknown
 * field, encoded with the SDK's own JobFailurePolicy schema. HTTP cannot carry it at all.
 */
const RETRY_FOREVER = {
  no: 9,
  wireType: WireType.LengthDelimited,
  data: new BinaryWriter()
    .bytes(toBinary(JobFailurePolicySchema, create(JobFailurePolicySchema, { policy: { case: 'constant', value: { interval: { seconds: 1n } } } })))
    .finish(),
};

/** The sidecar takes a Go duration for `dueTime`; milliseconds keep it exact. */
function dueIn(dueAt: Date): string {
  return `${Math.max(0, dueAt.getTime() - Date.now())}ms`;
}
