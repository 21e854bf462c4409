import { lazy, type ComponentType, type LazyExoticComponent } from 'react';
import type { ScreenSlug } from '../paths.ts';

/**
 * The screen of each navigation entry, loaded on first visit (its own chunk, so sign-in stays
 * small). A screen not built yet is absent here and shows a placeholder. One line per screen:
 * add yours here (see web/README.md).
 */
export const screens: Partial<Record<ScreenSlug, LazyExoticComponent<ComponentType>>> = {
  overview: lazy(() => import('./overview/Overview.tsx')),
  settings: lazy(() => import('./settings/Settings.tsx')),
  contacts: lazy(() => import('./contacts/Contacts.tsx')),
  events: lazy(() => import('./events/Events.tsx')),
  segments: lazy(() => import('./segments/Segments.tsx')),
  campaigns: lazy(() => import('./campaigns/Campaigns.tsx')),
  workflows: lazy(() => import('./workflows/Workflows.tsx')),
  templates: lazy(() => import('./templates/Templates.tsx')),
  domains: lazy(() => import('./domains/Domains.tsx')),
};
