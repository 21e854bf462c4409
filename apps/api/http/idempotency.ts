import type { Request, Response } from 'express';
import { idempotent, type Attempt } from '../../../domain/idempotency.ts';
import type { Platform } from '../../../runtime/platform.ts';

/**
 * Runs `work` under the request's `Idempotency-Key` (if any) and marks a replayed answer with
 * `Idempotent-Replayed: true`. For the public endpoints that take the header. `work` gets the
 * attempt of domain/idempotency.ts: its seed is the same for a retry that takes over a crashed
 * first attempt.
 */
export async function withIdempotencyKey<T>(
  p: Platform,
  input: { auth: { projectId: string }; body: unknown; req: Request; res: Response },
  endpoint: string,
  work: (attempt: Attempt) => Promise<T>,
): Promise<T> {
  const key = input.req.get('idempotency-key');
  const { response, replayed } = await idempotent(p, { projectId: input.auth.projectId, endpoint, key }, input.body, work);
  if (replayed) input.res.setHeader('Idempotent-Replayed', 'true');
  return response;
}
