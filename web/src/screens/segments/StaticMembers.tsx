import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { membersSchema } from '../../../../domain/segments/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';
import { segmentKeys, type Segment } from './api.ts';

/** Emails typed one per line, or separated by commas or spaces. */
const emailsOf = (text: string) => text.split(/[\s,;]+/).filter(Boolean);

/** Adding and removing members of a static segment by email (an unknown email becomes a contact). */
export function StaticMembers({ segment }: { segment: Segment }) {
  const project = useCurrentProject();
  const queryClient = useQueryClient();
  const [text, setText] = useState('');
  const [errors, setErrors] = useState<FieldErrors>({});
  const [result, setResult] = useState('');
  const path = `/segments/${encodeURIComponent(segment.id)}/members`;
  const change = useMutation({
    mutationFn: ({ method, emails }: { method: 'POST' | 'DELETE'; emails: string[] }) =>
      api<{ added?: number; created?: number; alreadyMembers?: number; removed?: number; notMembers?: number }>(path, {
        method,
        projectId: project.id,
        body: { emails },
      }),
    onSuccess: (r, { method }) => {
      const message =
        method === 'POST'
          ? `Added ${r.added} (${r.created} new ${r.created === 1 ? 'contact' : 'contacts'}); ${r.alreadyMembers} already members.`
          : `Removed ${r.removed}; ${r.notMembers} were not members.`;
      setResult(message);
      setText('');
      return queryClient.invalidateQueries({ queryKey: segmentKeys.all(project.id) });
    },
    onError: (error) => setErrors(serverFieldErrors(error)),
  });

  function run(method: 'POST' | 'DELETE') {
    const checked = validate(membersSchema, { emails: emailsOf(text) });
    setErrors(checked.errors ?? {});
    setResult('');
    if (checked.data) change.mutate({ method, emails: checked.data.emails });
  }
  const problems = Object.entries(errors).map(([key, message]) => {
    const index = /^emails\.(\d+)/.exec(key)?.[1];
    return index === undefined ? message : `${emailsOf(text)[Number(index)] ?? `Email ${Number(index) + 1}`}: ${message}`;
  });

  return (
    <section aria-labelledby="static-title" className="card">
      <h2 id="static-title">Members</h2>
      <FormError message={change.error ? errorMessage(change.error) : undefined} />
      <div className="field">
        <label htmlFor="static-emails">Emails to add or remove</label>
        <textarea
          id="static-emails"
          rows={3}
          value={text}
          onChange={(e) => setText(e.target.value)}
          aria-invalid={problems.length ? true : undefined}
          aria-describedby="static-emails-hint"
        />
        <p className="hint" id="static-emails-hint">
          One per line or separated by commas; at most 1,000 at a time. An email that is not a contact yet becomes one (subscribed).
        </p>
        {problems.length > 0 && <p className="field-error">{problems.join(' ')}</p>}
      </div>
      <div className="actions">
        <button type="button" className="primary" onClick={() => run('POST')} disabled={change.isPending}>
          Add members
        </button>
        <button type="button" onClick={() => run('DELETE')} disabled={change.isPending}>
          Remove members
        </button>
        <span className="saved" role="status">
          {result}
        </span>
      </div>
    </section>
  );
}
