import { useState, type FormEvent } from 'react';
import { contactPatchSchema, newContactSchema } from '../../../../domain/contacts/schema.ts';
import { errorMessage } from '../../api/client.ts';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { DataEditor } from './DataEditor.tsx';
import { dataOf, rowsOf, type DataRow } from './data-rows.ts';
import type { Contact } from './types.ts';

export interface ContactInput {
  email?: string;
  subscribed?: boolean;
  data?: Record<string, string | number | boolean | null>;
}

/**
 * Create (no `contact`) or edit a contact: email, subscription, typed data. Checked with the
 * API's own schema before sending; the API's field errors land on the same fields.
 */
export function ContactForm({
  contact,
  submitLabel,
  pending,
  error,
  onSubmit,
  onCancel,
}: {
  contact?: Contact;
  submitLabel: string;
  pending: boolean;
  error?: unknown;
  onSubmit: (input: ContactInput) => void;
  onCancel?: () => void;
}) {
  const [rows, setRows] = useState<DataRow[]>(() => rowsOf(contact?.data ?? {}));
  const [errors, setErrors] = useState<FieldErrors>({});
  const shown = { ...serverFieldErrors(error), ...errors };

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const { data, errors: rowErrors } = dataOf(rows, contact?.data);
    // Editing leaves the subscription to the contact page's switch.
    const values = { email: String(form.get('email') ?? ''), ...(contact ? {} : { subscribed: form.get('subscribed') === 'on' }), data };
    const checked = contact ? validate(contactPatchSchema, values) : validate(newContactSchema, values);
    const all = { ...(checked.errors ?? {}), ...rowErrors };
    setErrors(all);
    if (checked.data && Object.keys(all).length === 0) onSubmit(checked.data as ContactInput);
  }

  return (
    <form onSubmit={submit} noValidate aria-label={contact ? `Edit ${contact.email}` : 'New contact'}>
      <FormError message={error ? errorMessage(error) : undefined} />
      {shown.data && <p className="field-error" role="alert">{shown.data}</p>}
      <Field label="Email" name="email" type="email" defaultValue={contact?.email} error={shown.email} autoComplete="off" required autoFocus />
      {!contact && (
        <div className="field checkbox">
          <input id="contact-subscribed" name="subscribed" type="checkbox" defaultChecked />
          <label htmlFor="contact-subscribed">Subscribed to marketing email</label>
        </div>
      )}
      <DataEditor rows={rows} onChange={setRows} errors={shown} disabled={pending} />
      <div className="actions">
        <button type="submit" className="primary" disabled={pending}>
          {pending ? 'Saving…' : submitLabel}
        </button>
        {onCancel && (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
    </form>
  );
}
