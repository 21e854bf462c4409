/**
 * The actor runtime port: virtual actors addressed by (type, id), one turn at a time per
 * actor, durable state and one-shot reminders that survive restarts. A call and a reminder run
 * with the request id (runtime/request-context.ts) that was current where they were made.
 * Embedded: an in-process host persisting to the document store; distributed: Dapr actors.
 */
export interface ActorContext<S> {
  readonly type: string;
  readonly id: string;
  /** The state saved by an earlier turn, or undefined for an actor that has none. */
  loadState(): Promise<S | undefined>;
  saveState(state: S): Promise<void>;
  /** Forgets the state (the actor behaves as new afterwards). */
  deleteState(): Promise<void>;
  /** Fires `onReminder(name, payload)` once at `dueAt`; setting a name again replaces it. */
  setReminder(name: string, dueAt: Date, payload?: unknown): Promise<void>;
  deleteReminder(name: string): Promise<void>;
}

export type ActorMethod<S> = (ctx: ActorContext<S>, input: any) => Promise<unknown>;

export interface ActorDefinition<S = unknown> {
  /** The actor type name, also the Dapr actor type. */
  type: string;
  methods: Record<string, ActorMethod<S>>;
  onReminder?(ctx: ActorContext<S>, name: string, payload: unknown): Promise<void>;
}

export interface ActorRuntime {
  /** Register every actor type before `start()`. */
  register<S>(definition: ActorDefinition<S>): void;
  /**
   * Runs `method` on actor (type, id) in its own turn and returns its result.
   * An AppError thrown inside arrives at the caller as the same AppError.
   */
  invoke<R = unknown>(type: string, id: string, method: string, input?: unknown): Promise<R>;
  /**
   * Reminders set and not yet fired or deleted, as far as this process knows (for metrics).
   * Embedded: every reminder. Dapr: those this process set, less those it saw fire or deleted.
   */
  pendingReminders(): number;
  start(): Promise<void>;
  stop(): Promise<void>;
}
