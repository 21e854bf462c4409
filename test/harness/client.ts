/** A small HTTP client for behaviour tests: every call returns status, headers and parsed JSON. */
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

type Body = NonNullable<RequestInit['body']>;

export interface CallOptions {
  /** Bearer credential: a key or a session token. */
  auth?: string;
  headers?: Record<string, string>;
  /** A raw body (string or FormData) sent as is, instead of JSON. */
  raw?: Body;
}

/**
 * The requestId of every 500 a test got: a 500 is always a bug, and an instance's dispose prints
 * what the platform logged for each (distributed mode, whose logs are files deleted after).
 */
export const internalErrors = new Set<string>();

export class ApiClient {
  readonly baseUrl: string;
  readonly auth?: string;

  constructor(baseUrl: string, auth?: string) {
    this.baseUrl = baseUrl;
    this.auth = auth;
  }

  /** The same client with another credential. */
  as(auth: string | undefined): ApiClient {
    return new ApiClient(this.baseUrl, auth);
  }

  async call<T = any>(method: string, path: string, body?: unknown, options: CallOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    const auth = options.auth ?? this.auth;
    if (auth) headers.authorization = `Bearer ${auth}`;
    let payload: Body | undefined = options.raw;
    if (payload === undefined && body !== undefined) {
      headers['content-type'] ??= 'application/json';
      payload = JSON.stringify(body);
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers, body: payload });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: the test sees the text
    }
    const requestId = res.status === 500 ? (parsed as { error?: { requestId?: unknown } } | undefined)?.error?.requestId : undefined;
    if (typeof requestId === 'string') internalErrors.add(requestId);
    return { status: res.status, headers: res.headers, body: parsed as T };
  }

  get = <T = any>(path: string, options?: CallOptions) => this.call<T>('GET', path, undefined, options);
  post = <T = any>(path: string, body?: unknown, options?: CallOptions) => this.call<T>('POST', path, body, options);
  put = <T = any>(path: string, body?: unknown, options?: CallOptions) => this.call<T>('PUT', path, body, options);
  patch = <T = any>(path: string, body?: unknown, options?: CallOptions) => this.call<T>('PATCH', path, body, options);
  delete = <T = any>(path: string, body?: unknown, options?: CallOptions) => this.call<T>('DELETE', path, body, options);
}

/** An event as the API lists it (GET /events, GET /events/contact/:id). */
export interface EventRecord {
  id: string;
  name: string;
  contactId: string;
  data: Record<string, unknown>;
  system: boolean;
  createdAt: string;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 10_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** An email as GET /emails/:id shows it: the parts the tests wait on, typed. */
export interface EmailRecord {
  status: string;
  events: EventRecord[];
  reason?: string;
  [field: string]: any;
}

/** Whether the email left QUEUED and SENDING, the two statuses from which it may still be sent. */
export const emailFinished = (email: EmailRecord) => email.status !== 'QUEUED' && email.status !== 'SENDING';

/** Polls GET /emails/:id until `done` holds for the email, which it then returns. */
export const waitForEmail = (api: ApiClient, id: string, done: (email: EmailRecord) => boolean, timeoutMs: number, what: string) =>
  eventually(async () => {
    const email = (await api.get<{ data?: EmailRecord }>(`/emails/${id}`)).body.data;
    return email && done(email) ? email : undefined;
  }, timeoutMs, what);

/**
 * Waits until the mailer is done with a sent email: DELIVERED, its `email.delivery` recorded
 * (the mailer writes the status last). A test that opens, clicks, complains about or patches what
 * an email touches waits for this first: on FerretDB, the distributed tests' MongoDB, an update
 * racing the mailer's own can undo it or be undone (docs/decisions.md, "Distributed store"); on
 * MongoDB itself each update of one document is atomic.
 */
export const waitForDelivered = (api: ApiClient, id: string, timeoutMs: number) =>
  waitForEmail(api, id, (email) => email.status === 'DELIVERED' && email.events.some((e) => e.name === 'email.delivery'), timeoutMs, `email ${id} DELIVERED`);

/** Every contact of the project the client's key opens, through the cursor pages. */
export async function allContacts<C = { id: string; email: string; subscribed: boolean; data: Record<string, unknown> }>(api: ApiClient): Promise<C[]> {
  const out: C[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 1000; pages++) {
    const res: ApiResponse = await api.get(`/contacts?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    if (res.status !== 200) throw new Error(`GET /contacts answered ${res.status}: ${JSON.stringify(res.body)}`);
    out.push(...res.body.data.contacts);
    if (!res.body.data.hasMore) return out;
    cursor = res.body.data.cursor;
  }
  throw new Error('too many pages');
}

/** An import or bulk job as GET /jobs/:id answers it (DESIGN: Jobs). */
export interface Job {
  id: string;
  type: string;
  status: 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'FAILED';
  total: number;
  processed: number;
  created: number;
  updated: number;
  failed: number;
  errors: { row?: number; contactId?: string; message: string }[];
  createdAt: string;
  finishedAt: string | null;
}
