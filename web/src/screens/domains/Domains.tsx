import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useNotices } from '../../app/notices.tsx';
import { Loading, Page } from '../../app/Page.tsx';
import { Field, FormError } from '../../forms/Field.tsx';
import { serverFieldErrors, type FieldErrors } from '../../forms/validate.ts';
import './domains.css';
import { DomainCard } from './DomainCard.tsx';
import type { Domain } from './types.ts';

/**
 * The project's sending domains (user-session routes: no X-Project-Id). An admin adds one; anyone
 * in the project sees its records and verifies. The domain name is checked by the API only: its
 * rule (punycode, IP addresses) needs Node's URL and net modules, so a 422 names the field here.
 */
export default function Domains() {
  const project = useCurrentProject();
  const admin = project.role === 'ADMIN';
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const [errors, setErrors] = useState<FieldErrors>({});
  const domains = useQuery({
    queryKey: ['domains', project.id],
    queryFn: () => api<Domain[]>(`/domains/project/${encodeURIComponent(project.id)}`),
  });
  const add = useMutation({
    mutationFn: (domain: string) => api<Domain>('/domains', { method: 'POST', body: { projectId: project.id, domain } }),
    onSuccess: (domain) => {
      say(`${domain.domain} added: publish its records, then verify`);
      return queryClient.invalidateQueries({ queryKey: ['domains', project.id] });
    },
    onError: (error) => setErrors(serverFieldErrors(error)),
  });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const domain = String(new FormData(form).get('domain') ?? '').trim();
    if (!domain) return setErrors({ domain: 'Enter a domain name, such as example.com' });
    setErrors({});
    add.mutate(domain, { onSuccess: () => form.reset() });
  }

  return (
    <Page title="Domains">
      {admin ? (
        <form onSubmit={submit} noValidate className="card" aria-labelledby="add-domain-title">
          <h2 id="add-domain-title">Add a domain</h2>
          <FormError message={add.error && !errors.domain ? errorMessage(add.error) : undefined} />
          <Field label="Domain name" name="domain" placeholder="news.example.com" error={errors.domain} hint="The exact domain of your sender addresses: a@news.example.com needs news.example.com." />
          <button type="submit" className="primary" disabled={add.isPending}>
            {add.isPending ? 'Adding…' : 'Add domain'}
          </button>
        </form>
      ) : (
        <p className="notice">Only admins of this project add and remove domains; you can see their records and verify them.</p>
      )}
      {domains.isPending ? (
        <Loading what="Loading the domains" />
      ) : domains.error ? (
        <p role="alert">{errorMessage(domains.error)}</p>
      ) : domains.data.length === 0 ? (
        <p className="empty">No domain yet. Email is sent only from addresses on a verified domain of the project.</p>
      ) : (
        domains.data.map((d) => <DomainCard key={d.id} domain={d} admin={admin} />)
      )}
    </Page>
  );
}
