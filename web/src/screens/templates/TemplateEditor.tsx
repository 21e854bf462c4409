import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { useNavigate, useParams } from 'react-router';
import { createTemplateSchema, patchTemplateSchema, TEMPLATE_TYPES } from '../../../../domain/templates/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { Loading, Page } from '../../app/Page.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { paths } from '../../paths.ts';
import { HtmlEditor } from '../../forms/HtmlEditor.tsx';
import { Preview, type PreviewContact } from './Preview.tsx';
import { PreviewContactPicker } from './PreviewContactPicker.tsx';
import { TestSend } from './TestSend.tsx';
import { typeLabel } from './TemplateList.tsx';
import type { Template } from './types.ts';

const BLANK = { name: '', subject: '', body: '<p>Hello {{ firstName ?? there }},</p>\n', from: '', fromName: '', replyTo: '', description: '', type: 'TRANSACTIONAL' };

/** Loads the template of the URL (or none for /new), then shows the editor. */
export function TemplateEditor() {
  const project = useCurrentProject();
  const { templateId } = useParams();
  const template = useQuery({
    queryKey: ['template', project.id, templateId],
    queryFn: () => api<Template>(`/templates/${encodeURIComponent(templateId!)}`, { projectId: project.id }),
    enabled: !!templateId,
  });
  if (!templateId) return <EditorForm key="new" template={null} />;
  if (template.isPending) return <Page title="Template"><Loading what="Loading the template" /></Page>;
  if (template.error) return <Page title="Template"><p role="alert">{errorMessage(template.error)}</p></Page>;
  return <EditorForm key={template.data.id} template={template.data} />;
}

/**
 * The template's fields and its HTML in CodeMirror beside a live preview with a chosen contact's
 * data. Saving validates with the API's own schemas (create, or patch of what changed).
 */
function EditorForm({ template }: { template: Template | null }) {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const bodyLabel = useId();
  const [values, setValues] = useState(() => (template ? { ...BLANK, ...nullsToBlank(template) } : BLANK));
  const [errors, setErrors] = useState<FieldErrors>({});
  const [contact, setContact] = useState<PreviewContact | null>(null);
  const confirmDelete = useDisclosure();
  const set = (field: keyof typeof BLANK) => (value: string) => setValues((v) => ({ ...v, [field]: value }));

  const save = useMutation({
    mutationFn: (body: unknown) =>
      template
        ? api<Template>(`/templates/${encodeURIComponent(template.id)}`, { method: 'PATCH', body, projectId: project.id })
        : api<Template>('/templates', { method: 'POST', body, projectId: project.id }),
    onSuccess: async (saved) => {
      say(`Template ${saved.name} saved`);
      await queryClient.invalidateQueries({ queryKey: ['templates', project.id] });
      queryClient.setQueryData(['template', project.id, saved.id], saved);
      if (!template) navigate(paths.screen(project.id, 'templates', `/${encodeURIComponent(saved.id)}`), { replace: true });
    },
    onError: (error) => setErrors(serverFieldErrors(error)),
  });
  const remove = useMutation({
    mutationFn: () => api(`/templates/${encodeURIComponent(template!.id)}`, { method: 'DELETE', projectId: project.id }),
    onSuccess: async () => {
      say(`Template ${template!.name} deleted`);
      await queryClient.invalidateQueries({ queryKey: ['templates', project.id] });
      navigate(paths.screen(project.id, 'templates'));
    },
  });

  function submit(event: FormEvent) {
    event.preventDefault();
    const optional = (v: string) => (v.trim() === '' ? null : v);
    const fields = { ...values, fromName: optional(values.fromName), replyTo: optional(values.replyTo), description: optional(values.description) };
    const checked = template ? validate(patchTemplateSchema, changedFields(template, fields)) : validate(createTemplateSchema, fields);
    setErrors(checked.errors ?? {});
    if (checked.data) save.mutate(checked.data);
  }

  return (
    <Page title={template ? `Template ${template.name}` : 'New template'}>
      <form onSubmit={submit} noValidate className="template-form">
        <FormError message={save.error ? errorMessage(save.error) : undefined} />
        <div className="columns">
          <Field label="Name" value={values.name} onChange={(e) => set('name')(e.target.value)} error={errors.name} maxLength={200} />
          <div className="field">
            <label htmlFor="template-type">Type</label>
            <select id="template-type" value={values.type} onChange={(e) => set('type')(e.target.value)}>
              {TEMPLATE_TYPES.map((t) => (
                <option key={t} value={t}>
                  {typeLabel(t)}
                  {t === 'MARKETING' ? ' (only to subscribed contacts, with the footer)' : ''}
                </option>
              ))}
            </select>
          </div>
        </div>
        <Field label="Subject" value={values.subject} onChange={(e) => set('subject')(e.target.value)} error={errors.subject} hint="{{variables}} work here too." />
        <div className="columns">
          <Field label="From address" type="email" value={values.from} onChange={(e) => set('from')(e.target.value)} error={errors.from} hint="On a verified domain of the project." />
          <Field label="From name" value={values.fromName} onChange={(e) => set('fromName')(e.target.value)} error={errors.fromName} />
          <Field label="Reply-to address" type="email" value={values.replyTo} onChange={(e) => set('replyTo')(e.target.value)} error={errors.replyTo} />
        </div>
        <Field label="Description" value={values.description} onChange={(e) => set('description')(e.target.value)} error={errors.description} />
        <div className="editor-and-preview">
          <div className="field">
            <span className="label" id={bodyLabel}>
              HTML body
            </span>
            <HtmlEditor value={values.body} onChange={set('body')} labelledBy={bodyLabel} invalid={!!errors.body} tall />
            {errors.body && <p className="field-error">{errors.body}</p>}
            <p className="hint">
              {'{{ name }}'} inserts a variable, {'{{ name ?? fallback }}'} with a fallback; {'{{ unsubscribeUrl }}'} and {'{{ manageUrl }}'} link to the
              contact's pages.
            </p>
          </div>
          <section aria-labelledby="preview-title">
            <h2 id="preview-title">Preview</h2>
            <PreviewContactPicker projectId={project.id} onChoose={setContact} />
            <Preview subject={values.subject} body={values.body} contact={contact} />
          </section>
        </div>
        <button type="submit" className="primary" disabled={save.isPending}>
          {save.isPending ? 'Saving…' : template ? 'Save template' : 'Create template'}
        </button>
      </form>
      {template && (
        <>
          <TestSend projectId={project.id} template={template} suggested={contact?.email} />
          <section className="card" aria-labelledby="delete-title">
            <h2 id="delete-title">Delete</h2>
            <FormError message={remove.error ? errorMessage(remove.error) : undefined} />
            {confirmDelete.open ? (
              <div className="confirm" role="group" aria-label="Confirm deleting the template" {...confirmDelete.dismissable}>
                <p>Campaigns and workflow steps that use it stop working. Delete {template.name}?</p>
                <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending} autoFocus>
                  Delete now
                </button>{' '}
                <button type="button" onClick={confirmDelete.close}>
                  Keep it
                </button>
              </div>
            ) : (
              <button type="button" ref={confirmDelete.opener(true)} onClick={() => confirmDelete.show(true)}>
                Delete template
              </button>
            )}
          </section>
        </>
      )}
    </Page>
  );
}

const nullsToBlank = (t: Template) => ({
  name: t.name,
  subject: t.subject,
  body: t.body,
  from: t.from,
  fromName: t.fromName ?? '',
  replyTo: t.replyTo ?? '',
  description: t.description ?? '',
  type: t.type,
});

/** PATCH sends only what changed (the API refuses {} with its own message). */
function changedFields(template: Template, fields: Record<string, string | null>) {
  return Object.fromEntries(Object.entries(fields).filter(([key, value]) => (template as Record<string, unknown>)[key] !== value));
}
