import type { Doc, DocumentStore } from '../../ports/store.ts';

export interface UserDoc extends Doc {
  email: string;
  passwordHash: string;
  emailVerified: boolean;
  createdAt: string;
}

/** `_id` is the hash of the session token; the token itself is never stored. */
export interface SessionDoc extends Doc {
  userId: string;
  createdAt: string;
  expiresAt: string;
}

export interface VerificationDoc extends Doc {
  userId: string;
  /** When its email was queued (absent on links of earlier versions). */
  createdAt?: string;
  expiresAt: string;
}

export interface ProjectDoc extends Doc {
  name: string;
  /** ISO 639-1 code for pages and footers when a contact has no `locale`. */
  language: string;
  /** Postal address printed in the footer of marketing email; absent until set. */
  address?: string;
  /** Whether marketing email gets the footer; absent means on. */
  footer?: boolean;
  secretKeyHash: string;
  publicKeyHash: string;
  createdAt: string;
}

export type Role = 'ADMIN' | 'MEMBER';

export interface MembershipDoc extends Doc {
  projectId: string;
  userId: string;
  role: Role;
  createdAt: string;
}

export const accounts = (store: DocumentStore) => ({
  users: store.collection<UserDoc>('users'),
  sessions: store.collection<SessionDoc>('sessions'),
  verifications: store.collection<VerificationDoc>('email_verifications'),
  projects: store.collection<ProjectDoc>('projects'),
  memberships: store.collection<MembershipDoc>('memberships'),
});

export async function ensureAccountIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('users', [{ keys: { email: 1 }, unique: true }]);
  await store.ensureIndexes('projects', [
    { keys: { secretKeyHash: 1 }, unique: true },
    { keys: { publicKeyHash: 1 }, unique: true },
  ]);
  store.cacheReads('projects'); // every API call looks its key up
  await store.ensureIndexes('memberships', [{ keys: { userId: 1 } }, { keys: { projectId: 1 } }]);
  await store.ensureIndexes('email_verifications', [{ keys: { userId: 1 } }]);
}
