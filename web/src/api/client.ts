/**
 * The one way the dashboard talks to the API: same origin, the session cookie, JSON both ways.
 * It adds X-CSRF-Token to unsafe calls and X-Project-Id to project calls, unwraps the envelope,
 * and turns an error envelope into an ApiError carrying the API's message, so every screen shows
 * the server's own words. A 401 tells the session to sign out (the shell then shows sign-in); a
 * 429 raises the retry notice with Retry-After.
 */
export interface FieldError {
  field: string;
  message: string;
  code?: string;
}

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly fieldErrors: FieldError[];
  readonly retryAfter?: number;
  readonly suggestion?: string;

  constructor(status: number, code: string, message: string, extra: { fieldErrors?: FieldError[]; retryAfter?: number; suggestion?: string } = {}) {
    super(message);
    this.status = status;
    this.code = code;
    this.fieldErrors = extra.fieldErrors ?? [];
    this.retryAfter = extra.retryAfter;
    this.suggestion = extra.suggestion;
  }
}

interface Listeners {
  onUnauthorized: () => void;
  onRateLimited: (retryAfterSeconds: number) => void;
}

const state: { csrfToken?: string; listeners: Listeners } = {
  listeners: { onUnauthorized: () => {}, onRateLimited: () => {} },
};

/** Set by the session once it knows the CSRF token (sign-in, or GET /auth/session on load). */
export const setCsrfToken = (token: string | undefined) => {
  state.csrfToken = token;
};

export const setApiListeners = (listeners: Listeners) => {
  state.listeners = listeners;
};

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  /** The project a secret-key route acts on (sent as X-Project-Id). */
  projectId?: string;
  query?: Record<string, string | number | boolean | undefined>;
  /** Sign-in and the session probe: a 401 there is an answer, not an expired session. */
  quietUnauthorized?: boolean;
  signal?: AbortSignal;
}

/** Calls the API and returns the envelope's `data` (undefined for 204). Throws ApiError. */
export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  return (await apiEnvelope<T>(path, options)).data;
}

/** Like `api`, with the whole success envelope (for lists whose paging sits beside `data`). */
export async function apiEnvelope<T>(path: string, options: RequestOptions = {}): Promise<{ data: T; nextCursor?: string | null; hasMore?: boolean; message?: string }> {
  const method = options.method ?? 'GET';
  const headers: Record<string, string> = { Accept: 'application/json' };
  // A FormData body (the CSV import) goes as multipart; the browser sets its boundary.
  const multipart = options.body instanceof FormData;
  if (options.body !== undefined && !multipart) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && state.csrfToken) headers['X-CSRF-Token'] = state.csrfToken;
  if (options.projectId) headers['X-Project-Id'] = options.projectId;
  const response = await fetch(withQuery(path, options.query), {
    method,
    headers,
    credentials: 'same-origin',
    body: options.body === undefined ? undefined : multipart ? (options.body as FormData) : JSON.stringify(options.body),
    signal: options.signal,
  });
  if (response.status === 204) return { data: undefined as T };
  const envelope = await response.json().catch(() => null);
  if (response.ok && envelope?.success) return envelope;
  throw toError(response, envelope, options);
}

function toError(response: Response, envelope: any, options: RequestOptions): ApiError {
  const e = envelope?.error;
  const retryAfter = Number(response.headers.get('retry-after') ?? e?.retryAfter) || undefined;
  const error = e
    ? new ApiError(response.status, String(e.code), String(e.message), { fieldErrors: e.errors, retryAfter, suggestion: e.suggestion })
    : new ApiError(response.status, 'NETWORK', `The server answered ${response.status} ${response.statusText}`.trim());
  if (response.status === 401 && !options.quietUnauthorized) state.listeners.onUnauthorized();
  if (response.status === 429) state.listeners.onRateLimited(retryAfter ?? 60);
  return error;
}

function withQuery(path: string, query: RequestOptions['query']): string {
  if (!query) return path;
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined && value !== '') search.set(key, String(value));
  const text = search.toString();
  return text ? `${path}?${text}` : path;
}

/** What to show for a failure: the API's message, or a network failure's. */
export function errorMessage(error: unknown): string {
  if (error instanceof ApiError) return error.message;
  if (error instanceof Error) return error.message === 'Failed to fetch' ? 'The server cannot be reached. Check your connection and try again.' : error.message;
  return 'Something went wrong.';
}
