import { useQuery } from '@tanstack/react-query';
import { createContext, useContext } from 'react';
import { api } from './client.ts';

export type Role = 'ADMIN' | 'MEMBER';

export interface Project {
  id: string;
  name: string;
  language: string;
  address: string;
  footer: boolean;
  createdAt: string;
  role: Role;
}

export interface IssuedKeys {
  secretKey: string;
  publicKey: string;
}

export const projectKeys = {
  all: ['projects'] as const,
  one: (id: string) => ['projects', id] as const,
};

export const useProjects = () => useQuery({ queryKey: projectKeys.all, queryFn: () => api<Project[]>('/projects') });

export const useProjectQuery = (id: string) =>
  useQuery({ queryKey: projectKeys.one(id), queryFn: () => api<Project>(`/projects/${encodeURIComponent(id)}`) });

/** The project the screens under /p/:projectId/ work on, with the user's role in it. */
export const ProjectContext = createContext<Project | null>(null);

export function useCurrentProject(): Project {
  const project = useContext(ProjectContext);
  if (!project) throw new Error('useCurrentProject outside a project screen');
  return project;
}

const LAST_PROJECT = 'mailroom.lastProject';
export const rememberProject = (id: string) => localStorage.setItem(LAST_PROJECT, id);
export const lastProject = () => localStorage.getItem(LAST_PROJECT);
