import type { Filter } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { requireVerifiedSender } from '../domains/sender.ts';
import { notFound } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { queueTestEmail } from '../mail/test-email.ts';
import { templates, toTemplate, type Template, type TemplateDoc } from './collection.ts';
import type { CreateTemplateInput, ListTemplatesQuery, PatchTemplateInput } from './schema.ts';
import { pageOf } from '../paging.ts';

/** Loads a template of this project; another project's id is simply not found. */
async function getTemplateDoc(p: Platform, projectId: string, id: string): Promise<TemplateDoc> {
  const doc = await templates(p.store).findOne({ _id: id, projectId });
  if (!doc) throw notFound('Template');
  return doc;
}

/**
 * A template of this project, or a 404 NOT_FOUND. The send paths (`/v1/send`, campaigns,
 * workflow SEND_EMAIL steps) use this; render with `renderTemplate` from `./render.ts`
 * (`html` for the body, `text` for the subject).
 */
export async function getTemplate(p: Platform, projectId: string, id: string): Promise<Template> {
  return toTemplate(await getTemplateDoc(p, projectId, id));
}

/** One test email of the saved template now to `email` (domain/mail/test-email.ts: "[TEST]", a contact's data). */
export async function sendTemplateTest(p: Platform, projectId: string, id: string, email: string) {
  return queueTestEmail(p, projectId, await getTemplateDoc(p, projectId, id), email, { source: 'send', id });
}

/** POST /templates: the sender must be on a verified domain of the project (403 otherwise). */
export async function createTemplate(p: Platform, projectId: string, input: CreateTemplateInput): Promise<Template> {
  await requireVerifiedSender(p, projectId, input.from);
  const at = nowIso();
  const doc: TemplateDoc = {
    _id: newId(),
    projectId,
    name: input.name,
    subject: input.subject,
    body: input.body,
    from: input.from,
    fromName: input.fromName ?? null,
    replyTo: input.replyTo ?? null,
    description: input.description ?? null,
    type: input.type,
    createdAt: at,
    updatedAt: at,
  };
  await templates(p.store).insertOne(doc);
  return toTemplate(doc);
}

/** PATCH /templates/:id: only the given fields change; a new `from` is checked like on create. */
export async function patchTemplate(p: Platform, projectId: string, id: string, input: PatchTemplateInput): Promise<Template> {
  await getTemplateDoc(p, projectId, id);
  if (input.from !== undefined) await requireVerifiedSender(p, projectId, input.from);
  const set: Partial<TemplateDoc> = { updatedAt: nowIso() };
  for (const [key, value] of Object.entries(input) as [keyof PatchTemplateInput, unknown][]) {
    if (value !== undefined) (set as Record<string, unknown>)[key] = value;
  }
  const updated = await templates(p.store).findOneAndUpdate({ _id: id, projectId }, { $set: set });
  if (!updated) throw notFound('Template');
  return toTemplate(updated);
}

export async function deleteTemplate(p: Platform, projectId: string, id: string): Promise<void> {
  const deleted = await templates(p.store).deleteOne({ _id: id, projectId });
  if (deleted === 0) throw notFound('Template');
}

const escapeRegex = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Page-numbered, newest first (ids are time-ordered); `search` is a literal partial match on the name. */
export async function listTemplates(p: Platform, projectId: string, query: ListTemplatesQuery) {
  const filter: Filter = { projectId };
  if (query.search) filter.name = { $regex: escapeRegex(query.search), $options: 'i' };
  if (query.type) filter.type = query.type;
  const collection = templates(p.store);
  const [docs, total] = await Promise.all([
    collection.find(filter, { sort: { _id: -1 }, skip: (query.page - 1) * query.pageSize, limit: query.pageSize }),
    collection.countDocuments(filter),
  ]);
  return { templates: docs.map(toTemplate), ...pageOf(query, total) };
}
