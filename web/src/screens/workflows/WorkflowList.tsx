import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { createWorkflowSchema } from '../../../../domain/workflows/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading, Page } from '../../app/Page.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { paths } from '../../paths.ts';
import type { Paged, Workflow, WorkflowWithSteps } from './types.ts';
import { Pager } from '../../app/Pager.tsx';

/** GET /workflows (search by name, page by page) and a new workflow, created disabled. */
export function WorkflowList() {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [search, setSearch] = useState('');
  const [page, setPage] = useState(1);
  const [errors, setErrors] = useState<FieldErrors>({});
  const searchId = useId();
  const list = useQuery({
    queryKey: ['workflows', project.id, search, page],
    queryFn: () => api<Paged & { workflows: Workflow[] }>('/workflows', { projectId: project.id, query: { search: search.trim(), page, pageSize: 20 } }),
    placeholderData: keepPreviousData,
  });
  const create = useMutation({
    mutationFn: (body: unknown) => api<WorkflowWithSteps>('/workflows', { method: 'POST', body, projectId: project.id }),
    onSuccess: async (created) => {
      await queryClient.invalidateQueries({ queryKey: ['workflows', project.id] });
      navigate(paths.screen(project.id, 'workflows', `/${encodeURIComponent(created.id)}`));
    },
    onError: (error) => setErrors(serverFieldErrors(error)),
  });
  const screen = (id: string) => paths.screen(project.id, 'workflows', `/${encodeURIComponent(id)}`);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const checked = validate(createWorkflowSchema, { name: form.get('name'), eventName: form.get('eventName') });
    setErrors(checked.errors ?? {});
    if (checked.data) create.mutate(checked.data);
  }

  return (
    <Page title="Workflows">
      <form onSubmit={submit} noValidate className="card" aria-labelledby="new-workflow-title">
        <h2 id="new-workflow-title">New workflow</h2>
        <FormError message={create.error ? errorMessage(create.error) : undefined} />
        <div className="columns">
          <Field label="Name" name="name" error={errors.name} maxLength={200} />
          <Field label="Trigger event" name="eventName" error={errors.eventName} hint="Starts an execution for the contact each time this event is recorded." />
        </div>
        <button type="submit" className="primary" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create workflow'}
        </button>
      </form>
      <div className="field inline" role="search" aria-label="Find workflows">
        <label htmlFor={searchId}>Search by name</label>
        <input id={searchId} type="search" value={search} maxLength={200} onChange={(e) => (setSearch(e.target.value), setPage(1))} />
      </div>
      {list.isPending ? (
        <Loading what="Loading the workflows" />
      ) : list.error ? (
        <p role="alert">{errorMessage(list.error)}</p>
      ) : list.data.workflows.length === 0 ? (
        <p className="empty">{search ? 'No workflow matches.' : 'No workflow yet. Create one above, then draw its steps.'}</p>
      ) : (
        <>
          <table aria-busy={list.isFetching}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Trigger event</th>
                <th scope="col">State</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {list.data.workflows.map((w) => (
                <tr key={w.id}>
                  <td>
                    <Link to={screen(w.id)}>{w.name}</Link>
                  </td>
                  <td className="mono">{w.eventName}</td>
                  <td>{w.enabled ? 'Enabled' : 'Disabled'}</td>
                  <td>
                    <time dateTime={w.updatedAt}>{new Date(w.updatedAt).toLocaleString()}</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager page={list.data.page} totalPages={list.data.totalPages} total={list.data.total} onPage={setPage} noun="workflows" />
        </>
      )}
    </Page>
  );
}
