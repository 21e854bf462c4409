import { Navigate, Outlet, useLocation } from 'react-router';
import { useSession } from '../api/session.tsx';
import { paths } from '../paths.ts';
import { Loading } from './Page.tsx';

/** The pages behind sign-in: signed out (or a 401 anywhere), the user goes to sign-in and comes back after. */
export function RequireSession() {
  const { user } = useSession();
  const location = useLocation();
  if (user === undefined) return <Loading what="Checking your session" />;
  if (user === null) {
    const next = location.pathname + location.search;
    return <Navigate to={`${paths.signIn}?next=${encodeURIComponent(next)}`} replace />;
  }
  return <Outlet />;
}
