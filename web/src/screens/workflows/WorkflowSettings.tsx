import { useEffect, useState, type FormEvent } from 'react';
import { patchWorkflowSchema } from '../../../../domain/workflows/schema.ts';
import { errorMessage } from '../../api/client.ts';
import { useNotices } from '../../app/notices.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import type { WorkflowWithSteps } from './types.ts';
import type { WorkflowActions } from './useWorkflowActions.ts';

/** Name, trigger event and description (saved together); enabled and allowReentry switch at once. */
export function WorkflowSettings({ workflow, actions }: { workflow: WorkflowWithSteps; actions: WorkflowActions }) {
  const { say } = useNotices();
  const [errors, setErrors] = useState<FieldErrors>({});
  const patch = actions.patchWorkflow;
  // The switches move at once; a refused change puts them back (the saved workflow is read again).
  const [switches, setSwitches] = useState({ enabled: workflow.enabled, allowReentry: workflow.allowReentry });
  useEffect(() => setSwitches({ enabled: workflow.enabled, allowReentry: workflow.allowReentry }), [workflow.enabled, workflow.allowReentry]);

  function toggle(key: 'enabled' | 'allowReentry', on: boolean, done: string) {
    setSwitches((s) => ({ ...s, [key]: on }));
    save({ [key]: on }, done, () => setSwitches((s) => ({ ...s, [key]: !on })));
  }

  function save(body: Record<string, unknown>, done: string, undo = () => {}) {
    const checked = validate(patchWorkflowSchema, body);
    setErrors(checked.errors ?? {});
    if (checked.data) patch.mutate(checked.data, { onSuccess: () => say(done), onError: (e) => (undo(), setErrors(serverFieldErrors(e))) });
  }

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const description = String(form.get('description') ?? '');
    save({ name: form.get('name'), eventName: form.get('eventName'), description: description.trim() ? description : null }, 'Workflow saved');
  }

  return (
    <section className="card" aria-labelledby="workflow-settings-title">
      <h2 id="workflow-settings-title">Trigger and settings</h2>
      <FormError message={patch.error ? errorMessage(patch.error) : undefined} />
      <div className="switches">
        <div className="field checkbox">
          <input
            id="workflow-enabled"
            type="checkbox"
            checked={switches.enabled}
            onChange={(e) => toggle('enabled', e.target.checked, e.target.checked ? 'Workflow enabled' : 'Workflow disabled')}
          />
          <label htmlFor="workflow-enabled">Enabled: new executions start on the trigger event</label>
        </div>
        <div className="field checkbox">
          <input
            id="workflow-reentry"
            type="checkbox"
            checked={switches.allowReentry}
            onChange={(e) => toggle('allowReentry', e.target.checked, e.target.checked ? 'Contacts may enter again' : 'Contacts enter once')}
          />
          <label htmlFor="workflow-reentry">Allow re-entry: a contact may go through it again on every event</label>
        </div>
      </div>
      <form onSubmit={submit} noValidate key={formKey(workflow)} className="columns">
        <Field label="Workflow name" name="name" defaultValue={workflow.name} error={errors.name} maxLength={200} />
        <Field label="Trigger event" name="eventName" defaultValue={workflow.eventName} error={errors.eventName} hint="A tracked event, or a system event such as email.open." />
        <Field label="Description" name="description" defaultValue={workflow.description ?? ''} error={errors.description} />
        <div className="field">
          <button type="submit" disabled={patch.isPending}>
            Save settings
          </button>
        </div>
      </form>
    </section>
  );
}

/**
 * The form is made again (its fields read afresh) when what it shows was saved, not on every
 * change of the workflow: a switch flipped, which saves at once, leaves a name being typed as it is.
 */
const formKey = (w: WorkflowWithSteps) => JSON.stringify([w.name, w.eventName, w.description]);
