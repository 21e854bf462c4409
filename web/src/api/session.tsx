import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useCallback, useContext, useMemo, type ReactNode } from 'react';
import type { z } from 'zod';
import type { publicUserSchema } from '../../../domain/accounts/schema.ts';
import { api, ApiError, setCsrfToken } from './client.ts';

/** A user as the API shows one (the API's own schema). */
export type User = z.infer<typeof publicUserSchema>;

interface SessionData {
  user: User;
  csrfToken: string;
}

interface Session {
  /** undefined while the first GET /auth/session is under way; null when signed out. */
  user: User | null | undefined;
  signIn(email: string, password: string): Promise<User>;
  signOut(): Promise<void>;
  /** The API said 401: the session is gone (expired, or signed out elsewhere). */
  expire(): void;
  refresh(): Promise<void>;
}

const SessionContext = createContext<Session | null>(null);
const SESSION_KEY = ['session'];

/** Who is signed in, from the session cookie; the CSRF token goes to the API client, never to a screen. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const queryClient = useQueryClient();
  const query = useQuery({
    queryKey: SESSION_KEY,
    queryFn: async () => {
      try {
        return remember(await api<SessionData>('/auth/session', { quietUnauthorized: true }));
      } catch (error) {
        if (error instanceof ApiError && error.status === 401) return remember(null);
        throw error;
      }
    },
    staleTime: Infinity,
    retry: false,
  });

  // Whatever one account cached must not show for the next (the session query itself stays observed).
  const forgetAccountData = useCallback(
    () => queryClient.removeQueries({ predicate: (q) => q.queryKey[0] !== SESSION_KEY[0] }),
    [queryClient],
  );

  const signIn = useCallback(
    async (email: string, password: string) => {
      const data = await api<SessionData>('/auth/session', { method: 'POST', body: { email, password }, quietUnauthorized: true });
      forgetAccountData();
      queryClient.setQueryData(SESSION_KEY, remember(data));
      return data.user;
    },
    [queryClient, forgetAccountData],
  );

  const expire = useCallback(() => {
    forgetAccountData();
    queryClient.setQueryData(SESSION_KEY, remember(null));
  }, [queryClient, forgetAccountData]);

  const signOut = useCallback(async () => {
    try {
      await api('/auth/session', { method: 'DELETE', quietUnauthorized: true });
    } finally {
      expire();
    }
  }, [expire]);

  const refresh = useCallback(() => queryClient.invalidateQueries({ queryKey: SESSION_KEY }), [queryClient]);

  const user = query.isError ? null : query.data === undefined ? undefined : (query.data?.user ?? null);
  const value = useMemo(() => ({ user, signIn, signOut, expire, refresh }), [user, signIn, signOut, expire, refresh]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

function remember(data: SessionData | null): SessionData | null {
  setCsrfToken(data?.csrfToken);
  return data;
}

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside SessionProvider');
  return session;
}
