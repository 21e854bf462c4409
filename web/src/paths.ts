/**
 * The dashboard's own URLs, shared by the app's router and the api app, which answers a browser
 * navigation to any of them with the app (apps/api/http/dashboard.ts). They never clash with an
 * API path except `/auth/verify`, the link in the verification email: a browser gets the app's
 * page there, a JSON client the API's answer. Plain TypeScript: no DOM, no Node.
 */
export const SCREENS = [
  { slug: 'overview', title: 'Overview' },
  { slug: 'contacts', title: 'Contacts' },
  { slug: 'segments', title: 'Segments' },
  { slug: 'templates', title: 'Templates' },
  { slug: 'campaigns', title: 'Campaigns' },
  { slug: 'workflows', title: 'Workflows' },
  { slug: 'events', title: 'Events' },
  { slug: 'domains', title: 'Domains' },
  { slug: 'settings', title: 'Settings' },
] as const;

export type ScreenSlug = (typeof SCREENS)[number]['slug'];

export const paths = {
  home: '/',
  signIn: '/signin',
  signUp: '/signup',
  verify: '/auth/verify',
  newProject: '/new-project',
  /** Every screen of a project lives under /p/<projectId>/. */
  projectRoot: '/p',
  screen: (projectId: string, slug: ScreenSlug, rest = '') => `/p/${encodeURIComponent(projectId)}/${slug}${rest}`,
};

/** The screen a path of the app shows (`/p/<projectId>/<slug>/…`), if any. */
export const screenOf = (pathname: string): ScreenSlug | undefined => {
  const slug = pathname.split('/')[3];
  return SCREENS.find((s) => s.slug === slug)?.slug;
};

const EXACT = new Set([paths.home, paths.signIn, paths.signUp, paths.verify, paths.newProject]);

/** Whether a browser navigation to `path` is a page of the app (anything under /p/ is; the app shows its own not-found). */
export const isAppPath = (path: string): boolean => EXACT.has(path) || path.startsWith(`${paths.projectRoot}/`);
