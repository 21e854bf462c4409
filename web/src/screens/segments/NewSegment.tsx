import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { createSegmentSchema, filterConditionSchema } from '../../../../domain/segments/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useNotices } from '../../app/notices.tsx';
import { Page } from '../../app/Page.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { paths } from '../../paths.ts';
import { countCondition, segmentKeys, type Segment } from './api.ts';
import { ConditionEditor } from './ConditionEditor.tsx';
import { newCondition, prefixed, relativeTo, type FilterCondition } from './filters.ts';
import { contactsNoun } from './LiveCount.tsx';

/** A new segment: dynamic (a condition, with its live count) or static (members added on its page). */
export function NewSegment() {
  const project = useCurrentProject();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const [type, setType] = useState<'DYNAMIC' | 'STATIC'>('DYNAMIC');
  const [condition, setCondition] = useState<FilterCondition>(newCondition);
  const [errors, setErrors] = useState<FieldErrors>({});
  const create = useMutation({
    mutationFn: (body: unknown) => api<Segment>('/segments', { method: 'POST', projectId: project.id, body }),
    onSuccess: (segment) => {
      say(`Segment ${segment.name} created`);
      void queryClient.invalidateQueries({ queryKey: segmentKeys.all(project.id) });
      navigate(paths.screen(project.id, 'segments', `/${encodeURIComponent(segment.id)}`));
    },
    onError: (error) => setErrors(serverFieldErrors(error)),
  });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const values = {
      name: form.get('name'),
      description: String(form.get('description') ?? '') || null,
      type,
      trackMembership: form.get('trackMembership') === 'on',
      ...(type === 'DYNAMIC' ? { condition } : {}),
    };
    const checked = validate(createSegmentSchema, values);
    const conditionChecked = type === 'DYNAMIC' ? validate(filterConditionSchema, condition) : { errors: undefined };
    const found = { ...checked.errors, ...prefixed(conditionChecked.errors, 'condition') };
    setErrors(found);
    if (checked.data && !conditionChecked.errors) create.mutate(checked.data);
  }

  return (
    <Page title="New segment">
      <form onSubmit={submit} noValidate className="card">
        <FormError message={create.error ? errorMessage(create.error) : undefined} />
        <Field label="Name" name="name" error={errors.name} maxLength={200} hint="Names the segment.<name>.entry and exit events, lower-cased with hyphens." />
        <div className="field">
          <label htmlFor="segment-description">Description (optional)</label>
          <textarea id="segment-description" name="description" rows={2} maxLength={1000} />
        </div>
        <fieldset className="choice-row">
          <legend>Type</legend>
          <label>
            <input type="radio" name="type" value="DYNAMIC" checked={type === 'DYNAMIC'} onChange={() => setType('DYNAMIC')} /> Dynamic: contacts matching a condition
          </label>
          <label>
            <input type="radio" name="type" value="STATIC" checked={type === 'STATIC'} onChange={() => setType('STATIC')} /> Static: contacts added by hand
          </label>
        </fieldset>
        {type === 'DYNAMIC' && (
          <ConditionEditor
            label="Condition"
            value={condition}
            onChange={setCondition}
            count={(c) => countCondition(project.id, c)}
            countKey={['segment-count', project.id]}
            noun={contactsNoun}
            errorPrefix="condition"
            saveErrors={relativeTo(errors, 'condition')}
          />
        )}
        <div className="field checkbox">
          <input id="segment-track" name="trackMembership" type="checkbox" />
          <label htmlFor="segment-track">Record segment entry and exit events (for workflows)</label>
        </div>
        <button type="submit" className="primary" disabled={create.isPending}>
          {create.isPending ? 'Creating…' : 'Create segment'}
        </button>
      </form>
    </Page>
  );
}
