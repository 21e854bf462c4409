import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { createStepSchema, patchStepSchema, stepConfigSchemas } from '../../../../domain/workflows/schema.ts';
import { errorMessage } from '../../api/client.ts';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { fromValues, toValues } from './config-form.ts';
import { StepConfigFields } from './StepConfigFields.tsx';
import { BRANCH_LABELS, branchesOf, STEP_LABELS } from './steps.ts';
import type { Step, StepType, Transition } from './types.ts';
import type { WorkflowActions } from './useWorkflowActions.ts';

/** A step being added from the palette: not saved until its config is valid. */
export interface Draft {
  type: Exclude<StepType, 'TRIGGER'>;
  position: { x: number; y: number };
  /** The step it follows (the one selected when the palette was used). */
  fromStepId?: string;
}

interface Props {
  projectId: string;
  steps: Step[];
  transitions: Transition[];
  actions: WorkflowActions;
  /** Editing a saved step, or adding a draft. */
  step?: Step;
  draft?: Draft;
  onDone: (stepId?: string) => void;
}

/**
 * The side panel: a step's name and config (checked with the API's own schemas before sending),
 * and its transitions. Connecting here is the keyboard's way to draw an edge.
 */
export function StepPanel({ projectId, steps, transitions, actions, step, draft, onDone }: Props) {
  const type = (step?.type ?? draft!.type) as StepType;
  const [name, setName] = useState(step?.name ?? STEP_LABELS[type].label);
  const [values, setValues] = useState(() => toValues(type, step?.config ?? {}));
  const [from, setFrom] = useState(draft?.fromStepId ?? '');
  const [branch, setBranch] = useState('');
  const [errors, setErrors] = useState<FieldErrors>({});
  const titleId = useId();
  // The panel takes focus when it opens (a step chosen, a palette choice, a step saved), so
  // keyboard and screen-reader users land on it rather than on a button that went away.
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  const fromStep = steps.find((s) => s.id === from);
  const pending = actions.saveStep.isPending || actions.addStep.isPending;
  const failure = actions.addStep.error ?? actions.saveStep.error ?? actions.deleteStep.error;

  async function submit(event: FormEvent) {
    event.preventDefault();
    const read = fromValues(type, values);
    if ('field' in read) return setErrors({ [`config.${read.field}`]: read.message });
    const config = type === 'TRIGGER' ? undefined : read.config;
    const checkedConfig = config ? validate(stepConfigSchemas[type as Draft['type']], config) : { data: undefined };
    const checked = step
      ? validate(patchStepSchema, { name, ...(config ? { config } : {}) })
      : validate(createStepSchema, { type, name, position: draft!.position, config });
    const found: FieldErrors = { ...(checked.errors ?? {}) };
    for (const [key, message] of Object.entries(checkedConfig.errors ?? {})) found[`config.${key}`] = message;
    if (fromStep && branchesOf(fromStep.type).length > 0 && !branch) found.branch = `Choose the branch of ${fromStep.name} that leads here`;
    setErrors(found);
    if (Object.keys(found).length > 0) return;
    try {
      if (step) {
        await actions.saveStep.mutateAsync({ stepId: step.id, body: checked.data });
        onDone(step.id);
      } else {
        const added = await actions.addStep.mutateAsync(checked.data);
        if (from) await actions.connect.mutateAsync({ fromStepId: from, toStepId: added.id, condition: branch ? { branch } : null });
        onDone(added.id);
      }
    } catch (error) {
      setErrors(serverFieldErrors(error));
    }
  }

  return (
    <aside className="card step-panel" aria-labelledby={titleId}>
      <h2 id={titleId} ref={heading} tabIndex={-1}>{step ? `${STEP_LABELS[type].label} step` : `New ${STEP_LABELS[type].label.toLowerCase()} step`}</h2>
      <p className="hint">{STEP_LABELS[type].does}.</p>
      <form onSubmit={submit} noValidate>
        <FormError message={failure ? errorMessage(failure) : undefined} />
        <Field label="Step name" value={name} onChange={(e) => setName(e.target.value)} error={errors.name} maxLength={200} disabled={type === 'TRIGGER'} />
        <StepConfigFields type={type} values={values} onChange={setValues} errors={errors} projectId={projectId} />
        {draft && <ConnectFrom steps={steps} from={from} setFrom={setFrom} branch={branch} setBranch={setBranch} error={errors.branch} />}
        {type !== 'TRIGGER' && (
          <button type="submit" className="primary" disabled={pending}>
            {pending ? 'Saving…' : step ? 'Save step' : 'Add step'}
          </button>
        )}{' '}
        <button type="button" onClick={() => onDone()}>
          {step ? 'Close' : 'Cancel'}
        </button>{' '}
        {step && type !== 'TRIGGER' && (
          <button
            type="button"
            className="danger"
            onClick={() => actions.deleteStep.mutate(step.id, { onSuccess: () => onDone() })}
            disabled={actions.deleteStep.isPending}
          >
            Delete step
          </button>
        )}
      </form>
      {step && <Transitions step={step} steps={steps} transitions={transitions} actions={actions} />}
    </aside>
  );
}

function ConnectFrom(props: { steps: Step[]; from: string; setFrom: (id: string) => void; branch: string; setBranch: (b: string) => void; error?: string }) {
  const fromId = useId();
  const branchId = useId();
  const fromStep = props.steps.find((s) => s.id === props.from);
  const branches = fromStep ? branchesOf(fromStep.type) : [];
  return (
    <div className="columns">
      <div className="field">
        <label htmlFor={fromId}>Comes after</label>
        <select id={fromId} value={props.from} onChange={(e) => (props.setFrom(e.target.value), props.setBranch(''))}>
          <option value="">Not connected yet</option>
          {props.steps
            .filter((s) => s.type !== 'EXIT')
            .map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
        </select>
      </div>
      {branches.length > 0 && <BranchSelect id={branchId} branches={branches} value={props.branch} onChange={props.setBranch} error={props.error} />}
    </div>
  );
}

function BranchSelect({ id, branches, value, onChange, error }: { id: string; branches: readonly string[]; value: string; onChange: (b: string) => void; error?: string }) {
  return (
    <div className="field">
      <label htmlFor={id}>Branch</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)} aria-invalid={error ? true : undefined}>
        <option value="">Choose a branch</option>
        {branches.map((b) => (
          <option key={b} value={b}>
            {BRANCH_LABELS[b as keyof typeof BRANCH_LABELS]}
          </option>
        ))}
      </select>
      {error && <p className="field-error">{error}</p>}
    </div>
  );
}

/** The transitions out of a step: remove one, or connect it to another step (by keyboard). */
function Transitions({ step, steps, transitions, actions }: { step: Step; steps: Step[]; transitions: Transition[]; actions: WorkflowActions }) {
  const [to, setTo] = useState('');
  const [branch, setBranch] = useState('');
  const [error, setError] = useState<string>();
  const toId = useId();
  const branchId = useId();
  const branches = branchesOf(step.type);
  const out = transitions.filter((t) => t.fromStepId === step.id);
  const nameOf = (id: string) => steps.find((s) => s.id === id)?.name ?? id;
  if (step.type === 'EXIT') return null;

  function connect(event: FormEvent) {
    event.preventDefault();
    if (!to) return setError('Choose the next step');
    if (branches.length > 0 && !branch) return setError('Choose a branch');
    setError(undefined);
    actions.connect.mutate(
      { fromStepId: step.id, toStepId: to, condition: branch ? { branch } : null },
      { onSuccess: () => (setTo(''), setBranch('')), onError: (e) => setError(errorMessage(e)) },
    );
  }

  return (
    <section aria-label={`Next steps after ${step.name}`}>
      <h3>Next steps</h3>
      {out.length === 0 ? (
        <p className="empty">None: an execution ends after this step.</p>
      ) : (
        <ul className="transitions">
          {out.map((t) => (
            <li key={t.id}>
              {t.condition?.branch ? `On ${BRANCH_LABELS[t.condition.branch]}: ` : ''}
              {nameOf(t.toStepId)}{' '}
              <button type="button" className="link-button" onClick={() => actions.disconnect.mutate(t.id)} aria-label={`Remove the link to ${nameOf(t.toStepId)}`}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      )}
      <form onSubmit={connect} noValidate className="columns">
        <div className="field">
          <label htmlFor={toId}>Connect to</label>
          <select id={toId} value={to} onChange={(e) => setTo(e.target.value)}>
            <option value="">Choose a step</option>
            {steps
              .filter((s) => s.id !== step.id && s.type !== 'TRIGGER')
              .map((s) => (
                <option key={s.id} value={s.id}>
                  {s.name}
                </option>
              ))}
          </select>
        </div>
        {branches.length > 0 && <BranchSelect id={branchId} branches={branches} value={branch} onChange={setBranch} />}
        <div className="field">
          <button type="submit" disabled={actions.connect.isPending}>
            Connect
          </button>
        </div>
      </form>
      {error && <p className="field-error" role="alert">{error}</p>}
    </section>
  );
}
