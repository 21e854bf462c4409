import { Suspense, useEffect } from 'react';
import { NavLink, Outlet, useLocation, useParams } from 'react-router';
import { ApiError, errorMessage } from '../api/client.ts';
import { ProjectContext, rememberProject, useProjectQuery } from '../api/projects.ts';
import { paths, SCREENS, type ScreenSlug } from '../paths.ts';
import { ErrorBoundary } from './ErrorBoundary.tsx';
import { Loading, Page } from './Page.tsx';
import { TopBar } from './TopBar.tsx';

/** Every screen of a project: the top bar, the navigation to each screen, the screen itself. */
export default function ProjectShell() {
  const projectId = useParams().projectId!;
  const location = useLocation();
  const screen = location.pathname.split('/')[3] as ScreenSlug | undefined;
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
              {/* A new page gets a fresh boundary: one screen's failure does not stick to the next. */}
              <ErrorBoundary key={location.pathname}>
                <Suspense fallback={<Loading />}>
                  <Outlet />
                </Suspense>
              </ErrorBoundary>
            </ProjectContext.Provider>
          )}
        </main>
      </div>
    </div>
  );
}
