import { useId, useRef } from 'react';
import { FILTER_OPERATORS, TIME_UNITS, fieldKindOf, type FilterOperator, type TimeUnit } from '../../../../domain/segments/vocabulary.ts';
import {
  errorsUnder,
  FIELD_CHOICES,
  fromLocalInput,
  newFilter,
  operatorLabel,
  operatorsFor,
  reshape,
  splitField,
  toLocalInput,
  typedValue,
  valueInputOf,
  type ConditionFilter,
  type FilterCondition,
} from './filters.ts';
import './segments.css';

interface Props {
  value: FilterCondition;
  onChange: (next: FilterCondition) => void;
  /** Problems keyed by their path in the condition (`groups.0.filters.1`, `logic`, '' for the whole). */
  errors?: Record<string, string>;
  /** Event names of the project, offered for `Event…` fields. */
  eventNames?: string[];
  disabled?: boolean;
  /** Names the builder for assistive technology ("Segment condition", "Audience filter"). */
  label: string;
}

/**
 * A FilterCondition editor: groups combined by AND or OR, each a list of filters that must all
 * hold; every field kind and the operators it takes, with units for the time operators. Each
 * filter is a labelled group of controls ("Group 1, filter 2"), operated by keyboard like any form.
 */
export function FilterBuilder({ value, onChange, errors = {}, eventNames = [], disabled, label }: Props) {
  const id = useId();
  const builder = useRef<HTMLFieldSetElement>(null);
  const setGroups = (groups: FilterCondition['groups']) => onChange({ ...value, groups });
  const setFilter = (g: number, f: number, filter: ConditionFilter) =>
    setGroups(value.groups.map((group, i) => (i !== g ? group : { filters: group.filters.map((old, j) => (j === f ? filter : old)) })));
  const addFilter = (g: number) => setGroups(value.groups.map((group, i) => (i === g ? { filters: [...group.filters, newFilter()] } : group)));
  const removeFilter = (g: number, f: number) => {
    const filters = value.groups[g].filters.filter((_, j) => j !== f);
    setGroups(filters.length ? value.groups.map((group, i) => (i === g ? { filters } : group)) : value.groups.filter((_, i) => i !== g));
    // The focused Remove button is gone: keyboard users continue from the group's (or the builder's) add button.
    requestAnimationFrame(() => {
      const target = filters.length ? `[data-add-filter="${g}"]` : '[data-add-group]';
      builder.current?.querySelector<HTMLButtonElement>(target)?.focus();
    });
  };
  const general = [errors[''], errors.logic, errors.groups].filter(Boolean);

  return (
    <fieldset ref={builder} className="filter-builder" disabled={disabled} aria-describedby={general.length ? `${id}-errors` : undefined}>
      <legend>{label}</legend>
      <div className="field inline">
        <label htmlFor={`${id}-logic`}>Groups combine with</label>
        <select id={`${id}-logic`} value={value.logic} onChange={(e) => onChange({ ...value, logic: e.target.value as 'AND' | 'OR' })}>
          <option value="AND">AND: every group holds</option>
          <option value="OR">OR: any group holds</option>
        </select>
      </div>
      {general.length > 0 && (
        <p className="field-error" id={`${id}-errors`}>
          {general.join(' ')}
        </p>
      )}
      {value.groups.map((group, g) => (
        <fieldset className="filter-group" key={g}>
          <legend>
            Group {g + 1} <span className="hint">(all of its filters hold)</span>
          </legend>
          {group.filters.map((filter, f) => (
            <FilterRow
              key={f}
              name={`Group ${g + 1}, filter ${f + 1}`}
              filter={filter}
              onChange={(next) => setFilter(g, f, next)}
              onRemove={() => removeFilter(g, f)}
              errors={errorsUnder(errors, `groups.${g}.filters.${f}`)}
              eventsListId={eventNames.length ? `${id}-events` : undefined}
            />
          ))}
          {errorsUnder(errors, `groups.${g}.filters`).length > 0 && !group.filters.length && (
            <p className="field-error">{errorsUnder(errors, `groups.${g}.filters`).join(' ')}</p>
          )}
          <button type="button" data-add-filter={g} onClick={() => addFilter(g)}>
            Add a filter to group {g + 1}
          </button>
        </fieldset>
      ))}
      <button type="button" data-add-group onClick={() => setGroups([...value.groups, { filters: [newFilter()] }])}>
        Add a group
      </button>
      {eventNames.length > 0 && (
        <datalist id={`${id}-events`}>
          {eventNames.map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
      )}
    </fieldset>
  );
}

interface RowProps {
  name: string;
  filter: ConditionFilter;
  onChange: (next: ConditionFilter) => void;
  onRemove: () => void;
  errors: string[];
  /** The datalist of the project's event names. */
  eventsListId?: string;
}

function FilterRow({ name, filter, onChange, onRemove, errors, eventsListId }: RowProps) {
  const id = useId();
  const { choice, rest } = splitField(filter.field);
  const kind = fieldKindOf(filter.field);
  const operators = operatorsFor(filter.field);
  const input = valueInputOf(filter.field, filter.operator);
  const errorId = `${id}-error`;
  const described = errors.length ? errorId : undefined;
  const invalid = errors.length ? true : undefined;
  const change = (patch: Partial<ConditionFilter>) => onChange(reshape({ ...filter, ...patch }));

  return (
    <fieldset className="filter-row" aria-describedby={described}>
      <legend className="visually-hidden">{name}</legend>
      <div className="field">
        <label htmlFor={`${id}-field`}>Field</label>
        <select id={`${id}-field`} value={choice} onChange={(e) => change({ field: e.target.value })} aria-invalid={invalid}>
          {FIELD_CHOICES.map((c) => (
            <option key={c.value} value={c.value}>
              {c.label}
            </option>
          ))}
        </select>
      </div>
      {(choice === 'data.' || choice === 'event.') && (
        <div className="field">
          <label htmlFor={`${id}-key`}>{choice === 'data.' ? 'Data key' : 'Event name'}</label>
          <input
            id={`${id}-key`}
            value={rest}
            list={choice === 'event.' ? eventsListId : undefined}
            placeholder={choice === 'data.' ? 'plan' : 'signed-up'}
            onChange={(e) => change({ field: `${choice}${e.target.value}` })}
            aria-invalid={invalid}
            size={14}
          />
        </div>
      )}
      <div className="field">
        <label htmlFor={`${id}-operator`}>Operator</label>
        <select
          id={`${id}-operator`}
          value={filter.operator}
          onChange={(e) => change({ operator: e.target.value as FilterOperator })}
          aria-invalid={invalid}
        >
          {FILTER_OPERATORS.filter((op) => operators.includes(op)).map((op) => (
            <option key={op} value={op}>
              {operatorLabel(kind, op)}
            </option>
          ))}
        </select>
      </div>
      {input === 'boolean' && (
        <div className="field">
          <label htmlFor={`${id}-value`}>Value</label>
          <select id={`${id}-value`} value={String(filter.value)} onChange={(e) => onChange({ ...filter, value: e.target.value === 'true' })}>
            <option value="true">yes (true)</option>
            <option value="false">no (false)</option>
          </select>
        </div>
      )}
      {input === 'instant' && (
        <div className="field">
          <label htmlFor={`${id}-value`}>Date and time (yours)</label>
          <input
            id={`${id}-value`}
            type="datetime-local"
            value={toLocalInput(filter.value)}
            onChange={(e) => onChange({ ...filter, value: fromLocalInput(e.target.value) })}
            aria-invalid={invalid}
          />
        </div>
      )}
      {(input === 'text' || input === 'count' || input === 'amount') && (
        <div className="field">
          <label htmlFor={`${id}-value`}>{input === 'amount' ? 'Amount' : input === 'count' ? 'Times' : 'Value'}</label>
          <input
            id={`${id}-value`}
            inputMode={input === 'text' ? undefined : 'decimal'}
            value={filter.value === undefined ? '' : String(filter.value)}
            onChange={(e) => onChange({ ...filter, value: typedValue(input, e.target.value) })}
            aria-invalid={invalid}
            size={input === 'text' ? 18 : 6}
          />
        </div>
      )}
      {input === 'amount' && (
        <div className="field">
          <label htmlFor={`${id}-unit`}>Unit</label>
          <select id={`${id}-unit`} value={filter.unit ?? 'days'} onChange={(e) => onChange({ ...filter, unit: e.target.value as TimeUnit })}>
            {TIME_UNITS.map((u) => (
              <option key={u} value={u}>
                {u}
              </option>
            ))}
          </select>
        </div>
      )}
      <button type="button" className="link-button" onClick={onRemove} aria-label={`Remove ${name.toLowerCase()}`}>
        Remove
      </button>
      {errors.length > 0 && (
        <p className="field-error" id={errorId}>
          {errors.join(' ')}
        </p>
      )}
    </fieldset>
  );
}
