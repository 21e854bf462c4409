import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { projectPatchSchema } from '../../../../domain/accounts/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { projectKeys, type Project } from '../../api/projects.ts';
import { useNotices } from '../../app/notices.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';

/** Name, language and the marketing footer (PATCH /projects/:id, admin); read-only for a member. */
export function GeneralSettings({ project, admin }: { project: Project; admin: boolean }) {
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const [errors, setErrors] = useState<FieldErrors>({});
  const save = useMutation({
    mutationFn: (body: unknown) => api<Project>(`/projects/${encodeURIComponent(project.id)}`, { method: 'PATCH', body }),
    onSuccess: () => {
      say('Settings saved');
      return queryClient.invalidateQueries({ queryKey: projectKeys.all });
    },
    onError: (error) => setErrors(serverFieldErrors(error)),
  });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const checked = validate(projectPatchSchema, {
      name: form.get('name'),
      language: form.get('language'),
      address: form.get('address'),
      footer: form.get('footer') === 'on',
    });
    setErrors(checked.errors ?? {});
    if (checked.data) save.mutate(checked.data);
  }

  return (
    <section aria-labelledby="general-title" className="card">
      <h2 id="general-title">Project</h2>
      <form onSubmit={submit} noValidate>
        <fieldset disabled={!admin || save.isPending}>
          <FormError message={save.error ? errorMessage(save.error) : undefined} />
          <Field label="Project name" name="name" defaultValue={project.name} error={errors.name} maxLength={100} />
          <Field label="Language" name="language" defaultValue={project.language} error={errors.language} hint="Two-letter code, such as en or fr." />
          <div className="field">
            <label htmlFor="project-address">Postal address (printed in the footer of marketing email)</label>
            <textarea id="project-address" name="address" rows={3} defaultValue={project.address} aria-invalid={errors.address ? true : undefined} />
            {errors.address && <p className="field-error">{errors.address}</p>}
          </div>
          <div className="field checkbox">
            <input id="project-footer" name="footer" type="checkbox" defaultChecked={project.footer} />
            <label htmlFor="project-footer">End marketing email with the footer (unsubscribe link and address)</label>
          </div>
          {admin && (
            <button type="submit" className="primary">
              {save.isPending ? 'Saving…' : 'Save'}
            </button>
          )}
          {save.isSuccess && !save.isPending && <span className="saved"> Saved.</span>}
        </fieldset>
      </form>
    </section>
  );
}
