import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { newMemberSchema } from '../../../../domain/accounts/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import type { Role } from '../../api/projects.ts';
import { useNotices } from '../../app/notices.tsx';
import { Loading } from '../../app/Page.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, validate, type FieldErrors } from '../../forms/validate.ts';

interface Member {
  userId: string;
  email: string;
  role: Role;
}

/** Who is in the project; an admin adds people who have signed up, or changes their role. */
export function MemberSettings({ projectId, admin }: { projectId: string; admin: boolean }) {
  const path = `/projects/${encodeURIComponent(projectId)}/members`;
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const [errors, setErrors] = useState<FieldErrors>({});
  const members = useQuery({ queryKey: ['members', projectId], queryFn: () => api<Member[]>(path) });
  const add = useMutation({
    mutationFn: (body: { email: string; role: Role }) => api<Member>(path, { method: 'POST', body }),
    onSuccess: (member) => {
      say(`${member.email} is now ${member.role === 'ADMIN' ? 'an admin' : 'a member'}`);
      return queryClient.invalidateQueries({ queryKey: ['members', projectId] });
    },
    onError: (error) => setErrors(serverFieldErrors(error)),
  });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const checked = validate(newMemberSchema, { email: form.get('email'), role: form.get('role') });
    setErrors(checked.errors ?? {});
    if (checked.data) add.mutate(checked.data, { onSuccess: () => (event.target as HTMLFormElement).reset() });
  }

  return (
    <section aria-labelledby="members-title" className="card">
      <h2 id="members-title">Members</h2>
      {members.isPending ? (
        <Loading what="Loading the members" />
      ) : members.error ? (
        <p role="alert">{errorMessage(members.error)}</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
            </tr>
          </thead>
          <tbody>
            {members.data.map((m) => (
              <tr key={m.userId}>
                <td>{m.email}</td>
                <td>{m.role === 'ADMIN' ? 'Admin' : 'Member'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {admin && (
        <form onSubmit={submit} noValidate className="inline-form" aria-label="Add a member or change a role">
          <h3>Add a member or change a role</h3>
          <FormError message={add.error ? errorMessage(add.error) : undefined} />
          <Field label="Email of a signed-up user" name="email" type="email" error={errors.email} />
          <div className="field">
            <label htmlFor="member-role">Role</label>
            <select id="member-role" name="role" defaultValue="MEMBER">
              <option value="MEMBER">Member: works with the project's data</option>
              <option value="ADMIN">Admin: also settings, keys, members and domains</option>
            </select>
          </div>
          <button type="submit" className="primary" disabled={add.isPending}>
            {add.isPending ? 'Saving…' : 'Save member'}
          </button>
        </form>
      )}
    </section>
  );
}
