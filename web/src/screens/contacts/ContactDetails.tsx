import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { Loading, Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import { ContactForm, type ContactInput } from './ContactForm.tsx';
import { display } from './data-rows.ts';
import { Timeline } from './Timeline.tsx';
import { contactKeys, type Contact } from './types.ts';

interface ContactSegment {
  id: string;
  name: string;
  type: 'DYNAMIC' | 'STATIC';
}

/** One contact: its data, subscription (a switch), segments and timeline; edit and delete. */
export function ContactDetails({ contactId }: { contactId: string }) {
  const project = useCurrentProject();
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const { say } = useNotices();
  // Leaving the edit form or the delete confirmation puts the focus back on the button that opened it.
  const editing = useDisclosure();
  const confirming = useDisclosure();
  const [switching, setSwitching] = useState<boolean | null>(null);
  const path = `/contacts/${encodeURIComponent(contactId)}`;
  const key = contactKeys.one(project.id, contactId);
  const contact = useQuery({ queryKey: key, queryFn: () => api<Contact>(path, { projectId: project.id }) });
  const segments = useQuery({
    queryKey: [...key, 'segments'],
    queryFn: () => api<ContactSegment[]>(`${path}/segments`, { projectId: project.id }),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: contactKeys.all(project.id) });
  const patch = useMutation({
    mutationFn: (body: ContactInput) => api<Contact>(path, { method: 'PATCH', body, projectId: project.id }),
    onSuccess: (saved) => {
      queryClient.setQueryData(key, saved);
      say('Contact saved');
      return refresh();
    },
  });
  const remove = useMutation({
    mutationFn: () => api<void>(path, { method: 'DELETE', projectId: project.id }),
    onSuccess: () => {
      say('Contact deleted');
      queryClient.removeQueries({ queryKey: key });
      void refresh();
      navigate(paths.screen(project.id, 'contacts'));
    },
  });

  if (contact.isPending) return <Page title="Contact"><Loading what="Loading the contact" /></Page>;
  if (contact.error)
    return (
      <Page title="Contact">
        <p role="alert">{errorMessage(contact.error)}</p>
        <Link to={paths.screen(project.id, 'contacts')}>Back to contacts</Link>
      </Page>
    );
  const c = contact.data;
  const entries = Object.entries(c.data);

  return (
    <Page title={c.email} actions={<Link to={paths.screen(project.id, 'contacts')}>All contacts</Link>}>
      <section aria-labelledby="contact-title" className="card">
        <h2 id="contact-title">Contact</h2>
        <div className="field checkbox">
          <input
            id="subscription"
            type="checkbox"
            role="switch"
            checked={switching ?? c.subscribed}
            disabled={patch.isPending}
            onChange={(e) => {
              // Shown at once; the contact as saved replaces it (or the old state comes back on an error).
              setSwitching(e.target.checked);
              patch.mutate({ subscribed: e.target.checked }, { onSettled: () => setSwitching(null) });
            }}
          />
          <label htmlFor="subscription">Subscribed to marketing email</label>
        </div>
        {patch.error && !editing.open && <p role="alert">{errorMessage(patch.error)}</p>}
        {editing.open ? (
          <div {...editing.dismissable}>
            <ContactForm
              contact={c}
              submitLabel="Save contact"
              pending={patch.isPending}
              error={patch.error}
              onSubmit={(input) =>
                patch.mutate(input, { onSuccess: editing.close })
              }
              onCancel={editing.close}
            />
          </div>
        ) : (
          <>
            <h3>Data</h3>
            {entries.length === 0 ? (
              <p className="empty">No custom fields.</p>
            ) : (
              <table aria-label="Data">
                <thead>
                  <tr>
                    <th scope="col">Key</th>
                    <th scope="col">Value</th>
                  </tr>
                </thead>
                <tbody>
                  {entries.map(([k, v]) => (
                    <tr key={k}>
                      <th scope="row" className="mono">{k}</th>
                      <td>{display(v)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <p className="hint">
              Created <time dateTime={c.createdAt}>{new Date(c.createdAt).toLocaleString()}</time>, updated{' '}
              <time dateTime={c.updatedAt}>{new Date(c.updatedAt).toLocaleString()}</time>
            </p>
            <div className="actions">
              <button type="button" ref={editing.opener(true)} onClick={() => { patch.reset(); editing.show(true); }}>
                Edit contact
              </button>
              {confirming.open ? (
                <span className="confirm" role="group" aria-label="Confirm delete" {...confirming.dismissable}>
                  Delete {c.email} with its events and segment memberships?{' '}
                  <button type="button" className="danger" autoFocus onClick={() => remove.mutate()} disabled={remove.isPending}>
                    Delete contact
                  </button>{' '}
                  <button type="button" onClick={confirming.close}>
                    Keep it
                  </button>
                </span>
              ) : (
                <button type="button" ref={confirming.opener(true)} onClick={() => confirming.show(true)}>
                  Delete…
                </button>
              )}
            </div>
            {remove.error && <p role="alert">{errorMessage(remove.error)}</p>}
          </>
        )}
      </section>

      <section aria-labelledby="segments-title" className="card">
        <h2 id="segments-title">Segments</h2>
        {segments.isPending ? (
          <Loading what="Loading the segments" />
        ) : segments.error ? (
          <p role="alert">{errorMessage(segments.error)}</p>
        ) : segments.data.length === 0 ? (
          <p className="empty">In no segment.</p>
        ) : (
          <ul aria-label="Segments of this contact">
            {segments.data.map((s) => (
              <li key={s.id}>
                <Link to={paths.screen(project.id, 'segments', `/${encodeURIComponent(s.id)}`)}>{s.name}</Link> <span className="tag">{s.type === 'STATIC' ? 'static' : 'dynamic'}</span>
              </li>
            ))}
          </ul>
        )}
      </section>

      <Timeline projectId={project.id} contactId={c.id} />
      <p>
        <Link to={`${paths.screen(project.id, 'events')}?contact=${encodeURIComponent(c.id)}`}>This contact in the events explorer</Link>
      </p>
    </Page>
  );
}
