import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { z } from 'zod';
import { emailSchema } from '../../../../domain/contacts/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useNotices } from '../../app/notices.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import type { Template } from './types.ts';

const testSchema = z.object({ to: emailSchema });

/**
 * Sends the saved template now through POST /v1/send (`template`, `to`): the email a recipient
 * would get, rendered with that address's contact data (docs/decisions.md, "Dashboard").
 */
export function TestSend({ projectId, template, suggested }: { projectId: string; template: Template; suggested?: string }) {
  const { say } = useNotices();
  const [errors, setErrors] = useState<FieldErrors>({});
  const send = useMutation({
    mutationFn: (to: string) => api<{ emails: { email: string; status?: string }[] }>('/v1/send', { method: 'POST', projectId, body: { to, template: template.id } }),
    onSuccess: (_, to) => say(`Test email of ${template.name} sent to ${to}`),
    onError: (error) => setErrors(serverFieldErrors(error)),
  });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const checked = validate(testSchema, { to: new FormData(event.currentTarget).get('to') });
    setErrors(checked.errors ?? {});
    if (checked.data) send.mutate(checked.data.to);
  }

  return (
    <form className="card" onSubmit={submit} noValidate aria-labelledby="test-title">
      <h2 id="test-title">Send a test</h2>
      <p className="hint">The saved template, sent now. An address that is a contact gets its own data; any other address becomes a contact.</p>
      <FormError message={send.error && !errors.to ? errorMessage(send.error) : undefined} />
      <Field label="Send the test to" name="to" type="email" key={suggested} defaultValue={suggested ?? ''} error={errors.to} />
      <button type="submit" disabled={send.isPending}>
        {send.isPending ? 'Sending…' : 'Send test'}
      </button>
      {send.isSuccess && !send.isPending && <p className="saved" role="status">Sent to {send.variables}.</p>}
    </form>
  );
}
