import { useQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { DELAY_UNITS } from '../../../../actors/workflow-execution/behaviour.ts';
import { WEBHOOK_METHODS } from '../../../../domain/workflows/schema.ts';
import { api } from '../../api/client.ts';
import { Field } from '../../forms/Field.tsx';
import type { FieldErrors } from '../../forms/validate.ts';
import type { ConfigValues } from './config-form.ts';
import type { StepType } from './types.ts';

interface Props {
  type: StepType;
  values: ConfigValues;
  onChange: (values: ConfigValues) => void;
  /** Keyed `config.<part>`, as the API and the schema name them. */
  errors: FieldErrors;
  projectId: string;
}

const UNIT_OPTIONS = [...DELAY_UNITS];

/** The inputs of one step type's config; every one labelled, its error announced with it. */
export function StepConfigFields({ type, values, onChange, errors, projectId }: Props) {
  const set = (key: string) => (e: { target: { value: string } }) => onChange({ ...values, [key]: e.target.value });
  const error = (key: string) => errors[`config.${key}`];
  const ids = { template: useId(), unit: useId(), timeoutUnit: useId(), method: useId(), headers: useId(), data: useId(), valueType: useId() };
  const templates = useQuery({
    queryKey: ['templates', projectId, 'all'],
    queryFn: () => api<{ templates: { id: string; name: string }[] }>('/templates', { projectId, query: { pageSize: 100 } }),
    enabled: type === 'SEND_EMAIL',
  });

  switch (type) {
    case 'SEND_EMAIL':
      return (
        <div className="field">
          <label htmlFor={ids.template}>Template</label>
          <select id={ids.template} value={values.templateId} onChange={set('templateId')} aria-invalid={error('templateId') || errors.templateId ? true : undefined}>
            <option value="">{templates.isPending ? 'Loading the templates…' : 'Choose a template'}</option>
            {templates.data?.templates.map((t) => (
              <option key={t.id} value={t.id}>
                {t.name}
              </option>
            ))}
          </select>
          {(error('templateId') || errors.templateId) && <p className="field-error">{error('templateId') ?? errors.templateId}</p>}
        </div>
      );
    case 'DELAY':
      return (
        <div className="columns">
          <Field label="Wait for" type="number" min={0} step="any" value={values.amount} onChange={set('amount')} error={error('amount')} />
          <div className="field">
            <label htmlFor={ids.unit}>Unit</label>
            <select id={ids.unit} value={values.unit} onChange={set('unit')}>
              {UNIT_OPTIONS.map((u) => (
                <option key={u}>{u}</option>
              ))}
            </select>
            {error('unit') && <p className="field-error">{error('unit')}</p>}
          </div>
        </div>
      );
    case 'WAIT_FOR_EVENT':
      return (
        <>
          <Field label="Event to wait for" value={values.eventName} onChange={set('eventName')} error={error('eventName')} hint="The contact's next event of this name takes the event branch." />
          <div className="columns">
            <Field label="Timeout after" type="number" min={0} step="any" value={values.timeoutAmount} onChange={set('timeoutAmount')} error={error('timeout')} />
            <div className="field">
              <label htmlFor={ids.timeoutUnit}>Timeout unit</label>
              <select id={ids.timeoutUnit} value={values.timeoutUnit} onChange={set('timeoutUnit')}>
                {UNIT_OPTIONS.map((u) => (
                  <option key={u}>{u}</option>
                ))}
              </select>
            </div>
          </div>
        </>
      );
    case 'CONDITION':
      return (
        <>
          <Field
            label="Field"
            value={values.field}
            onChange={set('field')}
            error={error('field')}
            hint="data.<key>, email, subscribed, createdAt, event.<name>, email.opened, segment, or trigger.data.<key>"
          />
          <Field label="Operator" value={values.operator} onChange={set('operator')} error={error('operator')} hint="As in segments: equals, notEquals, contains, greaterThan, exists, within, triggered, memberOf…" />
          <div className="columns">
            <Field label="Value" value={values.value} onChange={set('value')} error={error('value')} hint="Left empty for exists and notExists." />
            <div className="field">
              <label htmlFor={ids.valueType}>Compare as</label>
              <select id={ids.valueType} value={values.valueType} onChange={set('valueType')}>
                <option value="text">Text</option>
                <option value="number">Number</option>
                <option value="boolean">True or false</option>
              </select>
            </div>
            <Field label="Time unit" value={values.unit} onChange={set('unit')} error={error('unit')} hint="For time operators: days, hours or minutes." />
          </div>
        </>
      );
    case 'WEBHOOK':
      return (
        <>
          <Field label="URL" type="url" value={values.url} onChange={set('url')} error={error('url')} />
          <div className="field">
            <label htmlFor={ids.method}>Method</label>
            <select id={ids.method} value={values.method} onChange={set('method')}>
              {WEBHOOK_METHODS.map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </div>
          <div className="field">
            <label htmlFor={ids.headers}>Headers (one Name: value per line)</label>
            <textarea id={ids.headers} rows={3} value={values.headers} onChange={set('headers')} className="mono" aria-invalid={error('headers') ? true : undefined} />
            {error('headers') && <p className="field-error">{error('headers')}</p>}
          </div>
        </>
      );
    case 'UPDATE_CONTACT':
      return (
        <div className="field">
          <label htmlFor={ids.data}>Data to set (JSON; null removes a key)</label>
          <textarea id={ids.data} rows={4} value={values.data} onChange={set('data')} className="mono" aria-invalid={error('data') ? true : undefined} />
          {error('data') && <p className="field-error">{error('data')}</p>}
        </div>
      );
    case 'EXIT':
      return <Field label="Reason (shown on the execution)" value={values.reason} onChange={set('reason')} error={error('reason')} />;
    default:
      return <p className="hint">The trigger is the workflow's event; it has no settings of its own.</p>;
  }
}
