import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { api, errorMessage } from '../../api/client.ts';
import { useSession, type User } from '../../api/session.tsx';
import { Loading, Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';

/**
 * Where the verification email's link lands (GET /auth/verify?token= in a browser). The page asks
 * the API (the same path, as JSON), then drops the token from the address bar and history.
 */
export default function Verify() {
  const { user, refresh } = useSession();
  const [token] = useState(() => new URLSearchParams(window.location.search).get('token') ?? '');
  const verify = useQuery({
    queryKey: ['verify', token],
    queryFn: async () => {
      const verified = await api<{ verified: true; user: User }>('/auth/verify', { query: { token }, quietUnauthorized: true });
      // The session learns of it before the page says so: no "verify your address" banner after this.
      await refresh();
      return verified;
    },
    enabled: token !== '',
    staleTime: Infinity,
    retry: false,
  });
  useEffect(() => {
    if (verify.isSuccess) window.history.replaceState(null, '', paths.verify);
  }, [verify.isSuccess]);

  if (!token) {
    return (
      <Page title="Verification link incomplete">
        <p className="card" role="alert">
          This link has no token. Open the link from the email again, whole, or sign in and ask for a new one.
        </p>
      </Page>
    );
  }
  if (verify.isPending) return <Loading what="Verifying your email address" />;
  if (verify.error) {
    return (
      <Page title="This link does not work">
        <div className="card">
          <p role="alert">{errorMessage(verify.error)}</p>
          <p>
            <Link to={user ? paths.home : paths.signIn}>{user ? 'Go to your projects' : 'Sign in'}</Link> to ask for a new link.
          </p>
        </div>
      </Page>
    );
  }
  return (
    <Page title="Email address verified">
      <div className="card">
        <p>{verify.data.user.email} is verified.</p>
        <p>
          <Link to={user ? paths.home : paths.signIn}>{user ? 'Continue to your projects' : 'Sign in'}</Link>
        </p>
      </div>
    </Page>
  );
}
