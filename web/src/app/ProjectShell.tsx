import { Suspense, useEffect } from 'react';
import { NavLink, Outlet, useLocation, useParams } from 'react-router';
import { ApiError, errorMessage } from '../api/client.ts';
import { ProjectContext, rememberProject, useProjectQuery } from '../api/projects.ts';
import { paths, SCREENS, screenOf } from '../paths.ts';
import { ErrorBoundary } from './ErrorBoundary.tsx';
import { Loading, Page } from './Page.tsx';
import { TopBar } from './TopBar.tsx';

/** Every screen of a project: the top bar, the navigation to each screen, the screen itself. */
export default function ProjectShell() {
  const projectId = useParams().projectId!;
  const location = useLocation();
  const screen = screenOf(location.pathname);
  const project = useProjectQuery(projectId);
  useEffect(() => {
    if (project.data) rememberProject(project.data.id);
  }, [project.data]);

  return (
    <div className="shell">
      <TopBar projectId={projectId} screen={screen} />
      <div className="shell-body">
        <nav aria-label="Project screens" className="sidenav">
          <ul>
            {SCREENS.map((s) => (
              <li key={s.slug}>
                <NavLink to={paths.screen(projectId, s.slug)}>{s.title}</NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main">
          {project.isPending ? (
            <Loading what="Loading the project" />
          ) : project.error ? (
            <Page title={project.error instanceof ApiError && project.error.status === 404 ? 'Project not found' : 'The project cannot be loaded'}>
              <p role="alert">{errorMessage(project.error)}</p>
            </Page>
          ) : (
            <ProjectContext.Provider value={project.data}>
              {/* One Suspense boundary for every screen, outside the keyed error boundary: a navigation
                  (a transition) then keeps the screen before on view while the next one's code
                  loads, instead of a fresh boundary's "Loading…", whose reveal React holds back
                  for 300 ms. A new page gets a fresh error boundary: one screen's failure does
                  not stick to the next. */}
              <Suspense fallback={<Loading />}>
                <ErrorBoundary key={location.pathname}>
                  <Outlet />
                </ErrorBoundary>
              </Suspense>
            </ProjectContext.Provider>
          )}
        </main>
      </div>
    </div>
  );
}
