import { useId } from 'react';
import { DATA_TYPES, newRow, type DataRow } from './data-rows.ts';

/**
 * Custom fields as rows of key, type and value; a row is added or removed with its button. Each
 * input is labelled with its row's key, so a screen reader says which field it edits.
 */
export function DataEditor({ rows, onChange, errors, disabled }: { rows: DataRow[]; onChange: (rows: DataRow[]) => void; errors: Record<string, string>; disabled?: boolean }) {
  const base = useId();
  const update = (id: number, change: Partial<DataRow>) =>
    onChange(rows.map((r) => (r.id === id ? { ...r, ...change, ...(change.type && change.type !== r.type ? { value: change.type === 'boolean' ? 'true' : '' } : {}) } : r)));
  return (
    <fieldset className="data-editor" disabled={disabled}>
      <legend>Data</legend>
      {rows.length === 0 && <p className="empty">No custom fields.</p>}
      {rows.map((row, index) => {
        const name = row.key || `new field ${index + 1}`;
        const error = errors[`data.${row.key.trim()}`];
        const errorId = `${base}-${row.id}-error`;
        return (
          <div className="data-row" key={row.id} role="group" aria-label={row.key ? `Field ${row.key}` : `New field ${index + 1}`}>
            <div className="field">
              <label htmlFor={`${base}-${row.id}-key`}>Key</label>
              <input id={`${base}-${row.id}-key`} value={row.key} aria-label={`Key of ${name}`} onChange={(e) => update(row.id, { key: e.target.value })} maxLength={100} />
            </div>
            <div className="field">
              <label htmlFor={`${base}-${row.id}-type`}>Type</label>
              <select id={`${base}-${row.id}-type`} aria-label={`Type of ${name}`} value={row.type} onChange={(e) => update(row.id, { type: e.target.value as DataRow['type'] })}>
                {DATA_TYPES.map((t) => (
                  <option key={t.type} value={t.type}>
                    {t.label}
                  </option>
                ))}
              </select>
            </div>
            <div className="field">
              <label htmlFor={`${base}-${row.id}-value`}>Value</label>
              {row.type === 'boolean' ? (
                <select id={`${base}-${row.id}-value`} aria-label={`Value of ${name}`} value={row.value} onChange={(e) => update(row.id, { value: e.target.value })}>
                  <option value="true">Yes</option>
                  <option value="false">No</option>
                </select>
              ) : (
                <input
                  id={`${base}-${row.id}-value`}
                  aria-label={`Value of ${name}`}
                  type={row.type === 'number' ? 'number' : row.type === 'date' ? 'datetime-local' : 'text'}
                  step={row.type === 'number' ? 'any' : undefined}
                  value={row.value}
                  aria-invalid={error ? true : undefined}
                  aria-describedby={error ? errorId : undefined}
                  onChange={(e) => update(row.id, { value: e.target.value })}
                />
              )}
              {error && (
                <p className="field-error" id={errorId}>
                  {error}
                </p>
              )}
            </div>
            <button type="button" className="remove" onClick={() => onChange(rows.filter((r) => r.id !== row.id))} aria-label={`Remove ${name}`}>
              Remove
            </button>
          </div>
        );
      })}
      <button type="button" onClick={() => onChange([...rows, newRow()])}>
        Add field
      </button>
    </fieldset>
  );
}
