/**
 * The request a piece of work is done for, carried through async calls in a process and, by the
 * adapters, across processes: every message published and every actor call or reminder made
 * while a request id is current carries it, and its handler runs with it current again. The
 * logger (runtime/logging.ts) puts it on every line, so `requestId` finds an email's whole path:
 * the API call, the actor turns it caused, and the mailer's lines for that email.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

interface RequestContext {
  readonly requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** The request id of the work running now, if it was caused by a request. */
export const currentRequestId = (): string | undefined => storage.getStore()?.requestId;

/**
 * Runs `fn` as work for `requestId`. Without one, `fn` runs outside any request, so a handler of a
 * message that carried no id never logs the id of whatever happened to run before it.
 */
export function withRequestId<R>(requestId: string | undefined, fn: () => R): R {
  return requestId ? storage.run({ requestId }, fn) : storage.exit(fn);
}

/**
 * An `X-Request-Id` a caller may choose: 1 to 128 letters, digits and `-_.:`, starting with a
 * letter or digit (UUIDs, W3C trace ids, ULIDs and our own `req_…` all fit). Anything else is
 * ignored and the API makes its own id, so a header cannot inject text into a log line.
 */
const CALLER_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

export const isValidRequestId = (value: unknown): value is string => typeof value === 'string' && CALLER_REQUEST_ID.test(value);
