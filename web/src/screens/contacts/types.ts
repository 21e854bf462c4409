import type { Contact } from '../../../../domain/contacts/schema.ts';

export type { Contact };

/** A page of GET /contacts. */
export interface ContactPage {
  contacts: Contact[];
  cursor: string | null;
  hasMore: boolean;
  total?: number;
}

/** An import or bulk job as GET /contacts/import/:jobId and /contacts/bulk/:jobId answer it. */
export interface Job {
  id: string;
  type: 'IMPORT' | 'BULK_SUBSCRIBE' | 'BULK_UNSUBSCRIBE' | 'BULK_DELETE';
  status: 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'FAILED';
  total: number;
  processed: number;
  created: number;
  updated: number;
  failed: number;
  errors: { row?: number; contactId?: string; message: string }[];
  createdAt: string;
  finishedAt: string | null;
}

export interface ContactEvent {
  id: string;
  name: string;
  contactId: string;
  data: Record<string, string | number | boolean>;
  system: boolean;
  createdAt: string;
}

/** The query keys of this screen: every write invalidates `contactKeys.all(projectId)`. */
export const contactKeys = {
  all: (projectId: string) => ['contacts', projectId] as const,
  one: (projectId: string, id: string) => ['contacts', projectId, 'one', id] as const,
};
