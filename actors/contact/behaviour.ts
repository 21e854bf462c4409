// The life of one contact as a pure function: no I/O, no clock, no runtime imports.
import type { ContactData, SimpleValue } from '../../domain/contacts/schema.ts';
import { invalid } from '../../domain/errors.ts';
import { LIMITS } from '../../domain/limits.ts';

export interface ContactState {
  projectId: string;
  email: string;
  subscribed: boolean;
  data: Record<string, SimpleValue>;
  createdAt: string;
  updatedAt: string;
}

/** An event the contact records; `id` is given by the caller for tracked events. */
export interface RecordedEvent {
  id?: string;
  name: string;
  data: Record<string, SimpleValue>;
  system: boolean;
  /** When it happened, if before the turn (an email handed to SMTP before its answer came). */
  at?: string;
}

/** A service-generated event; `eventId` makes a repeat a no-op (see the shell). */
export interface SystemEvent {
  name: string;
  data?: Record<string, SimpleValue>;
  eventId?: string;
  at?: string;
}

export type ContactCommand =
  /** POST /contacts, CSV import, static segment add: merge data, subscription only when given. */
  | { kind: 'upsert'; subscribed?: boolean; data?: ContactData }
  | { kind: 'patch'; email?: string; subscribed?: boolean; data?: ContactData }
  /**
   * POST /v1/track and /v1/send: persistent data is merged; `event` is recorded. With `once`, an
   * event with that id recorded already makes the call a no-op (see the shell): the retry of a
   * call a crash cut off after its turn.
   */
  | { kind: 'track'; subscribed?: boolean; data?: ContactData; event?: { id: string; name: string; once?: boolean } }
  /** Unsubscribe link, bounce, complaint, bulk jobs. */
  | { kind: 'setSubscribed'; subscribed: boolean }
  /** Service-generated activity such as `email.open`; `eventId` makes a repeat a no-op (see the shell). */
  | ({ kind: 'recordSystemEvent' } & Omit<SystemEvent, 'at'>)
  | { kind: 'delete' };

export type ContactEffect =
  | { kind: 'saveProjection'; contact: ContactState; emailChanged: boolean }
  | { kind: 'recordEvent'; event: RecordedEvent }
  | { kind: 'deleteEverything' };

export interface Decision {
  state: ContactState | undefined;
  effects: ContactEffect[];
}

function mergeData(current: Record<string, SimpleValue>, patch: ContactData | undefined): Record<string, SimpleValue> {
  if (!patch) return current;
  const next = { ...current };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete next[key];
    else next[key] = value;
  }
  return next;
}

const sameData = (a: Record<string, SimpleValue>, b: Record<string, SimpleValue>) => {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.is(a[k], b[k]) && k in b);
};

/** A change of `subscribed` is itself an event: contact.subscribed / contact.unsubscribed. */
const subscriptionEvent = (subscribed: boolean): RecordedEvent => ({
  name: subscribed ? 'contact.subscribed' : 'contact.unsubscribed',
  data: {},
  system: true,
});

export function decide(state: ContactState, command: ContactCommand, now: Date): Decision {
  if (command.kind === 'delete') return { state: undefined, effects: [{ kind: 'deleteEverything' }] };

  const at = now.toISOString();
  const events: RecordedEvent[] = [];
  let next = state;

  if (command.kind === 'recordSystemEvent') {
    events.push(...systemRecorded([command]));
  } else {
    const email = command.kind === 'patch' && command.email !== undefined ? command.email : state.email;
    const subscribed = command.subscribed ?? state.subscribed;
    const data = command.kind === 'setSubscribed' ? state.data : mergeData(state.data, command.data);
    const keys = Object.keys(data).length;
    if (keys > LIMITS.data.keysPerContact && keys > Object.keys(state.data).length) {
      throw invalid('data', `A contact keeps at most ${LIMITS.data.keysPerContact} data keys; this would make ${keys}`, 'too_many_keys');
    }
    if (command.kind === 'track' && command.event) {
      events.push({ id: command.event.id, name: command.event.name, data: command.data ? pickSimple(command.data) : {}, system: false });
    }
    if (subscribed !== state.subscribed) events.push(subscriptionEvent(subscribed));
    const changed = email !== state.email || subscribed !== state.subscribed || !sameData(data, state.data);
    if (changed) next = { ...state, email, subscribed, data, updatedAt: at };
  }

  if (next === state && events.length === 0) return { state, effects: [] };
  return {
    state: next,
    effects: [
      { kind: 'saveProjection', contact: next, emailChanged: next.email !== state.email },
      ...events.map((event): ContactEffect => ({ kind: 'recordEvent', event })),
    ],
  };
}

/**
 * System events as they are recorded: with their given id and time, when they have them. An
 * email's (`email.sent` with the SMTP answer) skip `decide`: they change nothing but the counts,
 * which system-events.ts adds outside the contact's turns.
 */
export function systemRecorded(events: (SystemEvent | Omit<SystemEvent, 'at'>)[]): RecordedEvent[] {
  return events.map((e) => ({ ...(e.eventId ? { id: e.eventId } : {}), name: e.name, data: e.data ?? {}, system: true, ...('at' in e && e.at ? { at: e.at } : {}) }));
}

function pickSimple(data: ContactData): Record<string, SimpleValue> {
  return Object.fromEntries(Object.entries(data).filter((entry): entry is [string, SimpleValue] => entry[1] !== null));
}
