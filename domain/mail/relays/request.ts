import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError, invalid } from '../../errors.ts';
import type { RelayEvent } from './events.ts';
import type { SnsEffects } from './ses.ts';

/** A provider's POST as it arrived: the exact bytes (signatures cover them) and the headers, names lower-cased. */
export interface RelayRequest {
  body: Buffer;
  headers: Record<string, string | undefined>;
}

/** One relay provider: the setting its posts are checked with, and how it reads a post. */
export interface RelayProvider {
  setting: 'signingKey' | 'topicArn';
  /** What is wrong with a value of the setting, as a message; undefined when it is fit. */
  problemWith(value: string): string | undefined;
  /** Checks the post's signature (401 otherwise) and reads its events (422 for a malformed body). */
  read(req: RelayRequest, value: string, sns: SnsEffects): RelayEvent[] | Promise<RelayEvent[]>;
}

/** The one answer to a request whose signature or credential does not check out. */
export const badSignature = (provider: string) =>
  new AppError('UNAUTHORIZED', `The ${provider} signature does not match this project's ${provider} settings`);

/** The body as JSON, or a 422 on `body` (checked after the signature where the signature covers the bytes). */
export function jsonOf(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw invalid('body', 'The body is not JSON', 'invalid_json');
  }
}

/** Compares two secrets in constant time whatever their lengths (hashing first evens the lengths). */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** A field of an object of unknown shape (a provider payload), or undefined. */
export function field(value: unknown, ...path: string[]): unknown {
  let node = value;
  for (const key of path) {
    if (!node || typeof node !== 'object' || Array.isArray(node)) return undefined;
    node = Object.hasOwn(node, key) ? (node as Record<string, unknown>)[key] : undefined;
  }
  return node;
}

/** A stable id for a provider that gives its events none: the same payload (a retry) hashes the same. */
export const digestOf = (body: Buffer) => createHash('sha256').update(body).digest('base64url').slice(0, 32);
