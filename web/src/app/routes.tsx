import { lazy, Suspense, type ReactNode } from 'react';
import { createBrowserRouter, Navigate, Outlet } from 'react-router';
import { paths, SCREENS, screenOf } from '../paths.ts';
import { Placeholder } from '../screens/Placeholder.tsx';
import { screens } from '../screens/registry.ts';
import { preloadable } from './preloadable.tsx';
import { ErrorBoundary } from './ErrorBoundary.tsx';
import { Loading } from './Page.tsx';
import { RequireSession } from './RequireSession.tsx';
import { TopBar } from './TopBar.tsx';

// Each page is its own chunk: the first load of sign-in carries only what sign-in needs.
const SignIn = lazy(() => import('../screens/signin/SignIn.tsx'));
const SignUp = lazy(() => import('../screens/signin/SignUp.tsx'));
const Verify = lazy(() => import('../screens/signin/Verify.tsx'));
const Home = preloadable(() => import('../screens/projects/Home.tsx'));
const NewProject = lazy(() => import('../screens/projects/NewProject.tsx'));
const ProjectShell = preloadable(() => import('./ProjectShell.tsx'));
const NotFound = lazy(() => import('../screens/NotFound.tsx'));

/**
 * What signing in leads to, fetched while the password is checked: the home page (which goes on
 * to the Overview) or `next`'s screen, and the project shell, so that none of them shows its
 * "Loading…" on the way (see preloadable).
 */
export function preloadAfterSignIn(next: string): void {
  if (next === paths.home) Home.preload();
  ProjectShell.preload();
  screens[screenOf(next) ?? 'overview']?.preload();
}

/** Pages outside a project (sign-in, verify, new project): a centred column. */
function Plain() {
  return (
    <main id="main" className="plain">
      <ErrorBoundary>
        <Suspense fallback={<Loading />}>
          <Outlet />
        </Suspense>
      </ErrorBoundary>
    </main>
  );
}

/** Signed-in pages outside a project (home, new project): the top bar over a centred column. */
function Account() {
  return (
    <>
      <TopBar />
      <main id="main" className="plain">
        <ErrorBoundary>
          <Suspense fallback={<Loading />}>
            <Outlet />
          </Suspense>
        </ErrorBoundary>
      </main>
    </>
  );
}

const suspended = (node: ReactNode) => <Suspense fallback={<Loading />}>{node}</Suspense>;

function ScreenRoute({ slug, title }: { slug: (typeof SCREENS)[number]['slug']; title: string }) {
  const Screen = screens[slug];
  return Screen ? <Screen /> : <Placeholder title={title} />;
}

/** The app's routes; their paths are in paths.ts, which the api app reads to serve index.html. */
export const router = createBrowserRouter([
  {
    element: <Plain />,
    children: [
      { path: paths.signIn, element: <SignIn /> },
      { path: paths.signUp, element: <SignUp /> },
      { path: paths.verify, element: <Verify /> },
      { path: '*', element: <NotFound /> },
    ],
  },
  {
    element: <RequireSession />,
    children: [
      {
        element: <Account />,
        children: [
          { path: paths.home, element: <Home /> },
          { path: paths.newProject, element: <NewProject /> },
        ],
      },
      {
        path: `${paths.projectRoot}/:projectId`,
        element: suspended(<ProjectShell />),
        children: [
          { index: true, element: <Navigate to="overview" replace /> },
          ...SCREENS.map((s) => ({ path: `${s.slug}/*`, element: <ScreenRoute slug={s.slug} title={s.title} /> })),
          { path: '*', element: <NotFound /> },
        ],
      },
    ],
  },
]);
