import { preloadable, type Preloadable } from '../app/preloadable.tsx';
import type { ScreenSlug } from '../paths.ts';

/**
 * The screen of each navigation entry, its own chunk loaded on first visit (so sign-in stays
 * small), or ahead with `preload` (sign-in does, for the screen it leads to). A screen not built
 * yet is absent here and shows a placeholder. One line per screen: add yours here (see web/README.md).
 */
export const screens: Partial<Record<ScreenSlug, Preloadable>> = {
  overview: preloadable(() => import('./overview/Overview.tsx')),
  settings: preloadable(() => import('./settings/Settings.tsx')),
  contacts: preloadable(() => import('./contacts/Contacts.tsx')),
  events: preloadable(() => import('./events/Events.tsx')),
  segments: preloadable(() => import('./segments/Segments.tsx')),
  campaigns: preloadable(() => import('./campaigns/Campaigns.tsx')),
  workflows: preloadable(() => import('./workflows/Workflows.tsx')),
  templates: preloadable(() => import('./templates/Templates.tsx')),
  domains: preloadable(() => import('./domains/Domains.tsx')),
};
