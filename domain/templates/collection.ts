import type { Doc, DocumentStore } from '../../ports/store.ts';
import { TEMPLATE_TYPES } from './schema.ts';
export { TEMPLATE_TYPES };

export type TemplateType = (typeof TEMPLATE_TYPES)[number];

/** A template as the API shows it. */
export interface Template {
  id: string;
  name: string;
  subject: string;
  /** HTML. */
  body: string;
  from: string;
  fromName: string | null;
  replyTo: string | null;
  description: string | null;
  type: TemplateType;
  createdAt: string;
  updatedAt: string;
}

/** A saved template. Optional fields are stored as null, never absent. */
export interface TemplateDoc extends Doc, Omit<Template, 'id'> {
  projectId: string;
}

export const templates = (store: DocumentStore) => store.collection<TemplateDoc>('templates');

export async function ensureTemplateIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('templates', [{ keys: { projectId: 1 } }]);
}

export const toTemplate = (doc: TemplateDoc): Template => ({
  id: doc._id,
  name: doc.name,
  subject: doc.subject,
  body: doc.body,
  from: doc.from,
  fromName: doc.fromName ?? null,
  replyTo: doc.replyTo ?? null,
  description: doc.description ?? null,
  type: doc.type,
  createdAt: doc.createdAt,
  updatedAt: doc.updatedAt,
});
