import type { Request, Response } from 'express';
import type { z } from 'zod';

/**
 * How a route authenticates:
 * `secret` an `sk_` key; `key` an `sk_` or `pk_` key; `user` a session token; `none` nothing.
 */
export type AuthKind = 'none' | 'user' | 'secret' | 'key';

export interface KeyAuth {
  kind: 'key';
  projectId: string;
  keyKind: 'secret' | 'public';
  /** Set when a signed-in member calls through the dashboard (session cookie and X-Project-Id). */
  userId?: string;
}

export interface UserAuth {
  kind: 'user';
  userId: string;
  email: string;
  emailVerified: boolean;
}

type AuthOf<A extends AuthKind> = A extends 'secret' | 'key' ? KeyAuth : A extends 'user' ? UserAuth : undefined;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface HandlerInput<A extends AuthKind, P, Q, B> {
  auth: AuthOf<A>;
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
  requestId: string;
  req: Request;
  res: Response;
}

/** Where the next page of a cursor-paged list whose `data` is the array itself starts (see RouteSpec.cursorPage). */
export interface CursorPage {
  nextCursor: string | null;
  hasMore: boolean;
}

interface ReplyOptions {
  status?: number;
  message?: string;
  page?: CursorPage;
}

/** What a handler may return besides plain `data`: a different status, a top-level message or page. */
export class Reply {
  readonly data: unknown;
  readonly status?: number;
  readonly message?: string;
  readonly page?: CursorPage;

  constructor(data: unknown, options: ReplyOptions = {}) {
    this.data = data;
    this.status = options.status;
    this.message = options.message;
    this.page = options.page;
  }
}

export const reply = (data: unknown, options: ReplyOptions = {}) => new Reply(data, options);

export interface RouteSpec<
  A extends AuthKind = AuthKind,
  P extends z.ZodType | undefined = z.ZodType | undefined,
  Q extends z.ZodType | undefined = z.ZodType | undefined,
  B extends z.ZodType | undefined = z.ZodType | undefined,
> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Express path, e.g. `/contacts/:id`. */
  path: string;
  summary: string;
  /** More than the summary says, for the OpenAPI document (rules a client must know). */
  description?: string;
  tag: string;
  auth: A;
  params?: P;
  query?: Q;
  body?: B;
  /** A request with no body at all (no content, no Content-Type) is validated as `{}`. */
  bodyOptional?: boolean;
  /** A multipart/form-data upload of one file in `field`, instead of a JSON body. */
  upload?: { field: string; maxBytes: number };
  /**
   * The body as the exact bytes it came in (a Buffer in `req.body`; any Content-Type), for routes
   * that check a signature over them (relay webhooks). No `body` schema: the handler reads it.
   */
  rawBody?: { maxBytes: number; description: string };
  /** Largest JSON body accepted, in bytes; default LIMITS.body.defaultBytes (1 MB). */
  bodyLimit?: number;
  /** Success status; 204 sends no body. Default 200. */
  status?: 200 | 201 | 202 | 204;
  /** Other success statuses the handler answers with through `reply` (documented alongside `status`). */
  alsoStatus?: (200 | 201 | 202)[];
  /** Schema of the success envelope's `data`, for the OpenAPI document. */
  response?: z.ZodType;
  /**
   * The success answer is the bytes the handler returns (a Buffer), as `contentType`, not the
   * JSON envelope (errors keep it): a raw message.
   */
  rawResponse?: { contentType: string; description: string };
  /**
   * A cursor-paged list that kept `data` as the array of its items (clients read it so): the
   * envelope carries `nextCursor` and `hasMore` beside `data`, and the handler replies with `page`.
   */
  cursorPage?: boolean;
  /** Error statuses the route documents beyond the ones every route of its auth kind has. */
  errors?: number[];
  /** Set for routes whose calls are exempt from the per-project request budget. */
  unmetered?: boolean;
  /**
   * What a `user` route needs of the caller beyond a session: the admin role on the project
   * (403 FORBIDDEN otherwise) or a verified email address (403 EMAIL_VERIFICATION_REQUIRED).
   * The domain enforces both; this declares them for the OpenAPI document and the
   * authorization matrix test, which checks the two agree.
   */
  needs?: { admin?: boolean; verifiedEmail?: boolean };
  handle(input: HandlerInput<A, P, Q, B>): Promise<unknown>;
}

/** Declares a route; the identity function is there for type inference. */
export function route<
  A extends AuthKind,
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(spec: RouteSpec<A, P, Q, B>): RouteSpec {
  return spec as unknown as RouteSpec;
}
