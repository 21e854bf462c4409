import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { testTemplateSchema } from '../../../../domain/templates/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useNotices } from '../../app/notices.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import type { Template } from './types.ts';

/**
 * POST /templates/:id/test: the saved template now, subject prefixed "[TEST]", rendered with the
 * data of the contact with that address (another address gets the fallbacks).
 */
export function TestSend({ projectId, template, suggested }: { projectId: string; template: Template; suggested?: string }) {
  const { say } = useNotices();
  const [errors, setErrors] = useState<FieldErrors>({});
  const send = useMutation({
    mutationFn: (email: string) => api<{ email: string; to: string }>(`/templates/${encodeURIComponent(template.id)}/test`, { method: 'POST', projectId, body: { email } }),
    onSuccess: (_, to) => say(`Test email of ${template.name} sent to ${to}`),
    onError: (error) => setErrors(serverFieldErrors(error)),
  });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const checked = validate(testTemplateSchema, { email: new FormData(event.currentTarget).get('email') });
    setErrors(checked.errors ?? {});
    if (checked.data) send.mutate(checked.data.email);
  }

  return (
    <form className="card" onSubmit={submit} noValidate aria-labelledby="test-title">
      <h2 id="test-title">Send a test</h2>
      <p className="hint">
        The saved template, sent now with "[TEST]" before its subject. A contact's address gets its own data; any other address gets the fallbacks.
      </p>
      <FormError message={send.error && !errors.email ? errorMessage(send.error) : undefined} />
      <Field label="Send the test to" name="email" type="email" key={suggested} defaultValue={suggested ?? ''} error={errors.email} />
      <button type="submit" disabled={send.isPending}>
        {send.isPending ? 'Sending…' : 'Send test'}
      </button>
      {send.isSuccess && !send.isPending && <p className="saved" role="status">Sent to {send.variables}.</p>}
    </form>
  );
}
