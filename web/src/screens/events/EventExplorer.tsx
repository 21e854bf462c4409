import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, apiEnvelope, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import type { EventRecord } from './types.ts';

interface Contact {
  id: string;
  email: string;
}

/**
 * Events newest first, filtered by name and contact (kept in the address: `?name=&contact=<id>`),
 * a page at a time: GET /events, or GET /events/contact/:id when a contact is chosen. The
 * contact is typed as an email and looked up among the contacts.
 */
export function EventExplorer() {
  const project = useCurrentProject();
  const [params, setParams] = useSearchParams();
  const name = params.get('name') ?? '';
  const contactId = params.get('contact') ?? '';
  const [lookupError, setLookupError] = useState('');
  const nameId = useId();
  const contactInputId = useId();

  const names = useQuery({ queryKey: ['events', project.id, 'names'], queryFn: () => api<string[]>('/events/names', { projectId: project.id }) });
  const contact = useQuery({
    queryKey: ['contacts', project.id, 'one', contactId],
    queryFn: () => api<Contact>(`/contacts/${encodeURIComponent(contactId)}`, { projectId: project.id }),
    enabled: contactId !== '',
  });
  const events = useInfiniteQuery({
    queryKey: ['events', project.id, 'explorer', name, contactId],
    queryFn: ({ pageParam }) =>
      apiEnvelope<EventRecord[]>(contactId ? `/events/contact/${encodeURIComponent(contactId)}` : '/events', {
        projectId: project.id,
        query: { name, limit: 50, cursor: pageParam },
      }),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => (last.hasMore ? (last.nextCursor ?? undefined) : undefined),
  });

  async function apply(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const next = new URLSearchParams();
    if (form.get('name')) next.set('name', String(form.get('name')));
    const email = String(form.get('contact') ?? '').trim().toLowerCase();
    setLookupError('');
    if (email) {
      try {
        const found = await api<{ contacts: Contact[] }>('/contacts', { projectId: project.id, query: { search: email, limit: 100 } });
        const match = found.contacts.find((c) => c.email === email);
        if (!match) return setLookupError(`No contact has the email ${email}`);
        next.set('contact', match.id);
      } catch (error) {
        return setLookupError(errorMessage(error));
      }
    }
    setParams(next);
  }

  const items = events.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <section aria-labelledby="explorer-title" className="card">
      <h2 id="explorer-title" tabIndex={-1}>Explorer</h2>
      <form className="toolbar" onSubmit={apply} aria-label="Filter events" key={`${name}|${contactId}|${contact.data?.email ?? ''}`}>
        <div className="field">
          <label htmlFor={nameId}>Event name</label>
          <select id={nameId} name="name" defaultValue={name}>
            <option value="">Any event</option>
            {name && !names.data?.includes(name) && <option value={name}>{name}</option>}
            {names.data?.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={contactInputId}>Contact email</label>
          <input
            id={contactInputId}
            name="contact"
            type="email"
            defaultValue={contact.data?.email ?? ''}
            aria-invalid={lookupError ? true : undefined}
            aria-describedby={lookupError ? `${contactInputId}-error` : undefined}
          />
          {lookupError && (
            <p className="field-error" id={`${contactInputId}-error`} role="alert">
              {lookupError}
            </p>
          )}
        </div>
        <button type="submit">Show events</button>
      </form>
      {contact.error && <p role="alert">{errorMessage(contact.error)}</p>}
      {events.isPending ? (
        <Loading what="Loading the events" />
      ) : events.error ? (
        <p role="alert">{errorMessage(events.error)}</p>
      ) : items.length === 0 ? (
        <p className="empty">No event matches.</p>
      ) : (
        <table aria-label="Events">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Contact</th>
              <th scope="col">Data</th>
              <th scope="col">When</th>
            </tr>
          </thead>
          <tbody>
            {items.map((e) => (
              <tr key={e.id}>
                <td className="mono">{e.name}</td>
                <td>
                  <Link to={paths.screen(project.id, 'contacts', `/${encodeURIComponent(e.contactId)}`)}>
                    {contactId && contact.data ? contact.data.email : e.contactId}
                  </Link>
                </td>
                <td className="mono">{Object.keys(e.data).length ? JSON.stringify(e.data) : ''}</td>
                <td>
                  <time dateTime={e.createdAt}>{new Date(e.createdAt).toLocaleString()}</time>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {events.hasNextPage && (
        <button type="button" onClick={() => events.fetchNextPage()} disabled={events.isFetchingNextPage}>
          {events.isFetchingNextPage ? 'Loading…' : 'More events'}
        </button>
      )}
    </section>
  );
}
