import { Navigate } from 'react-router';
import { errorMessage } from '../../api/client.ts';
import { lastProject, useProjects } from '../../api/projects.ts';
import { Loading, Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';

/** `/`: the project used last (else the first), or creating the first one. */
export default function Home() {
  const projects = useProjects();
  if (projects.isPending) return <Loading what="Loading your projects" />;
  if (projects.error) {
    return (
      <Page title="Your projects">
        <p role="alert">{errorMessage(projects.error)}</p>
      </Page>
    );
  }
  if (projects.data.length === 0) return <Navigate to={paths.newProject} replace />;
  const pick = projects.data.find((p) => p.id === lastProject()) ?? projects.data[0];
  return <Navigate to={paths.screen(pick.id, 'overview')} replace />;
}
