import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { filterConditionSchema, patchSegmentSchema } from '../../../../domain/segments/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { Loading, Page } from '../../app/Page.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { paths } from '../../paths.ts';
import { countCondition, segmentKeys, type Segment } from './api.ts';
import { ConditionEditor } from './ConditionEditor.tsx';
import { prefixed, relativeTo, type FilterCondition } from './filters.ts';
import { contactsNoun } from './LiveCount.tsx';
import { SegmentMembers } from './SegmentMembers.tsx';
import { StaticMembers } from './StaticMembers.tsx';

/** One segment: its details and membership events, its condition (dynamic) or members (static), its contacts. */
export function SegmentDetail() {
  const project = useCurrentProject();
  const id = useParams().segmentId!;
  const segment = useQuery({
    queryKey: segmentKeys.one(project.id, id),
    queryFn: () => api<Segment>(`/segments/${encodeURIComponent(id)}`, { projectId: project.id }),
  });
  if (segment.isPending) return <Page title="Segment"><Loading what="Loading the segment" /></Page>;
  if (segment.error) {
    return (
      <Page title="Segment">
        <p role="alert">{errorMessage(segment.error)}</p>
        <Link to={paths.screen(project.id, 'segments')}>Back to the segments</Link>
      </Page>
    );
  }
  return <SegmentPage segment={segment.data} />;
}

function SegmentPage({ segment }: { segment: Segment }) {
  const project = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const { say } = useNotices();
  const path = `/segments/${encodeURIComponent(segment.id)}`;
  const [errors, setErrors] = useState<FieldErrors>({});
  const [condition, setCondition] = useState<FilterCondition>(() => segment.condition ?? { logic: 'AND', groups: [] });
  const confirmDelete = useDisclosure();
  const [tracking, setTracking] = useState(segment.trackMembership);
  useEffect(() => setTracking(segment.trackMembership), [segment.trackMembership]);

  const refresh = () => queryClient.invalidateQueries({ queryKey: segmentKeys.all(project.id) });
  const patch = useMutation({
    mutationFn: (body: unknown) => api<Segment>(path, { method: 'PATCH', projectId: project.id, body }),
    onSuccess: (saved) => {
      queryClient.setQueryData(segmentKeys.one(project.id, segment.id), saved);
      setErrors({});
      say('Segment saved');
      return refresh();
    },
    onError: (error) => setErrors(serverFieldErrors(error)),
  });
  const remove = useMutation({
    mutationFn: () => api(path, { method: 'DELETE', projectId: project.id }),
    onSuccess: () => {
      say(`Segment ${segment.name} deleted`);
      queryClient.removeQueries({ queryKey: segmentKeys.one(project.id, segment.id) });
      void refresh();
      navigate(paths.screen(project.id, 'segments'));
    },
  });

  function saveDetails(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const checked = validate(patchSegmentSchema, { name: form.get('name'), description: String(form.get('description') ?? '') || null });
    setErrors(checked.errors ?? {});
    if (checked.data) patch.mutate(checked.data);
  }

  function saveCondition() {
    const checked = validate(filterConditionSchema, condition);
    setErrors(prefixed(checked.errors, 'condition'));
    if (checked.data) patch.mutate({ condition: checked.data });
  }

  return (
    <Page title={segment.name}>
      <p>
        <Link to={paths.screen(project.id, 'segments')}>← All segments</Link>
      </p>
      <dl className="stats">
        <div className="stat">
          <dt>Members</dt>
          <dd>{segment.memberCount.toLocaleString()}</dd>
        </div>
        <div className="stat">
          <dt>Type</dt>
          <dd>{segment.type === 'DYNAMIC' ? 'Dynamic' : 'Static'}</dd>
        </div>
        <div className="stat">
          <dt>Events</dt>
          <dd className="mono">segment.{segment.slug}.entry|exit</dd>
        </div>
      </dl>
      <FormError message={patch.error ? errorMessage(patch.error) : remove.error ? errorMessage(remove.error) : undefined} />

      <section aria-labelledby="details-title" className="card">
        <h2 id="details-title">Details</h2>
        <form onSubmit={saveDetails} noValidate>
          <Field label="Name" name="name" defaultValue={segment.name} error={errors.name} maxLength={200} />
          <div className="field">
            <label htmlFor="segment-description">Description</label>
            <textarea id="segment-description" name="description" rows={2} maxLength={1000} defaultValue={segment.description ?? ''} />
          </div>
          <button type="submit" disabled={patch.isPending}>
            Save details
          </button>
        </form>
        <div className="field checkbox">
          <input
            id="segment-track"
            type="checkbox"
            checked={tracking}
            disabled={patch.isPending}
            onChange={(e) => {
              // Shown at once; put back if the API refuses.
              const on = e.target.checked;
              setTracking(on);
              patch.mutate({ trackMembership: on }, { onError: () => setTracking(!on) });
            }}
          />
          <label htmlFor="segment-track">Record segment entry and exit events (saved at once)</label>
        </div>
      </section>

      {segment.type === 'DYNAMIC' ? (
        <section aria-labelledby="condition-title" className="card">
          <h2 id="condition-title">Condition</h2>
          {segment.warnings.length > 0 && (
            <ul className="notice">
              {segment.warnings.map((w) => (
                <li key={w.filter}>
                  <span className="mono">{w.field}</span>: {w.message}
                </li>
              ))}
            </ul>
          )}
          <ConditionEditor
            label="Condition"
            value={condition}
            onChange={setCondition}
            count={(c) => countCondition(project.id, c)}
            countKey={['segment-count', project.id]}
            known={{ condition: segment.condition, count: segment.memberCount }}
            noun={contactsNoun}
            errorPrefix="condition"
            saveErrors={relativeTo(errors, 'condition')}
          />
          <button type="button" className="primary" onClick={saveCondition} disabled={patch.isPending}>
            Save condition
          </button>
        </section>
      ) : (
        <StaticMembers segment={segment} />
      )}

      <SegmentMembers segment={segment} />

      <section aria-labelledby="delete-title" className="card">
        <h2 id="delete-title">Delete</h2>
        {confirmDelete.open ? (
          <div className="confirm" role="group" aria-label="Confirm deletion" {...confirmDelete.dismissable}>
            <p>Campaigns and workflows that name this segment stop finding it. Delete {segment.name}?</p>
            <button type="button" className="danger" onClick={() => remove.mutate()} disabled={remove.isPending} autoFocus>
              Delete now
            </button>{' '}
            <button type="button" onClick={confirmDelete.close}>
              Keep it
            </button>
          </div>
        ) : (
          <button type="button" className="danger" ref={confirmDelete.opener(true)} onClick={() => confirmDelete.show(true)}>
            Delete segment
          </button>
        )}
      </section>
    </Page>
  );
}
