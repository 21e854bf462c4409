import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, errorMessage } from '../api/client.ts';
import { useProjects } from '../api/projects.ts';
import { useSession } from '../api/session.tsx';
import { paths, type ScreenSlug } from '../paths.ts';

/** Brand, project picker, new project, the signed-in user and sign-out; the unverified-address banner. */
export function TopBar({ projectId, screen }: { projectId?: string; screen?: ScreenSlug }) {
  const { user, signOut } = useSession();
  const navigate = useNavigate();
  const projects = useProjects();
  return (
    <>
      <a href="#main" className="skip-link">
        Skip to content
      </a>
      <header className="topbar">
        <Link to={paths.home} className="brand">
          mailroom
        </Link>
        {projects.data && projects.data.length > 0 && (
          <label className="project-picker">
            <span>Project</span>
            <select
              value={projectId ?? ''}
              onChange={(e) => navigate(paths.screen(e.target.value, screen ?? 'overview'))}
            >
              {!projectId && <option value="">Choose a project</option>}
              {projects.data.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <Link to={paths.newProject}>New project</Link>
        <span className="spacer" />
        <span className="user-email">{user?.email}</span>
        <button type="button" onClick={() => signOut().then(() => navigate(paths.signIn))}>
          Sign out
        </button>
      </header>
      {user && !user.emailVerified && <VerifyBanner email={user.email} />}
    </>
  );
}

function VerifyBanner({ email }: { email: string }) {
  const [sent, setSent] = useState(false);
  const resend = useMutation({ mutationFn: () => api('/auth/verify/resend', { method: 'POST' }), onSuccess: () => setSent(true) });
  return (
    <div className="notice" role="note">
      Verify your email address: open the link we sent to {email}. Domains can be added once it is verified.{' '}
      {sent ? (
        <strong>A new link is on its way.</strong>
      ) : (
        <button type="button" className="link-button" onClick={() => resend.mutate()} disabled={resend.isPending}>
          Send the link again
        </button>
      )}
      {resend.error && <span className="field-error"> {errorMessage(resend.error)}</span>}
    </div>
  );
}
