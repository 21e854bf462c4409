import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { newProjectSchema } from '../../../../domain/accounts/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { projectKeys, type IssuedKeys as Keys, type Project } from '../../api/projects.ts';
import { Page } from '../../app/Page.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { paths } from '../../paths.ts';
import { IssuedKeys } from './IssuedKeys.tsx';

type Created = Omit<Project, 'role'> & Keys;

/** Create a project (the user becomes its admin); its keys are shown once, then on to the project. */
export default function NewProject() {
  const queryClient = useQueryClient();
  const [errors, setErrors] = useState<FieldErrors>({});
  const create = useMutation({
    mutationFn: (body: { name: string; language?: string }) => api<Created>('/projects', { method: 'POST', body }),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: projectKeys.all }),
    onError: (error) => setErrors(serverFieldErrors(error)),
  });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const checked = validate(newProjectSchema, { name: form.get('name'), language: form.get('language') || undefined });
    setErrors(checked.errors ?? {});
    if (checked.data) create.mutate(checked.data);
  }

  if (create.data) {
    return (
      <Page title={`${create.data.name} is ready`}>
        <div className="card">
          <IssuedKeys keys={create.data} />
          <p>
            <Link className="button primary" to={paths.screen(create.data.id, 'overview')}>
              Continue to the project
            </Link>
          </p>
        </div>
      </Page>
    );
  }
  return (
    <Page title="New project">
      <form className="card" onSubmit={submit} noValidate>
        <FormError message={create.error ? errorMessage(create.error) : undefined} />
        <Field label="Project name" name="name" error={errors.name} required maxLength={100} />
        <Field
          label="Language"
          name="language"
          defaultValue="en"
          error={errors.language}
          hint="Two-letter code (ISO 639-1) of the pages and footers contacts see when they have no locale of their own."
        />
        <button type="submit" className="primary" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create project'}
        </button>
      </form>
    </Page>
  );
}
