import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { apiEnvelope, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading } from '../../app/Page.tsx';
import '../../app/pager.css';
import { paths } from '../../paths.ts';
import { BulkActions } from './BulkActions.tsx';
import { contactKeys, type ContactPage } from './types.ts';

const PAGE_SIZE = 25;
const FILTERS = [
  { value: '', label: 'All contacts' },
  { value: 'true', label: 'Subscribed' },
  { value: 'false', label: 'Unsubscribed' },
];

/**
 * The contacts table: email search and subscribed filter (kept in the address, so back and
 * forward work), a page at a time by cursor, a selection for bulk actions.
 */
export function ContactList() {
  const project = useCurrentProject();
  const [params, setParams] = useSearchParams();
  const search = params.get('search') ?? '';
  const subscribed = params.get('subscribed') ?? '';
  // The cursors of the pages before this one: Previous pops, Next pushes.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const searchId = useId();
  const filterId = useId();

  const list = (c: string | undefined) => ({
    queryKey: [...contactKeys.all(project.id), 'list', search, subscribed, c],
    queryFn: () => apiEnvelope<ContactPage>('/contacts', { projectId: project.id, query: { limit: PAGE_SIZE, cursor: c, search, subscribed } }).then((e) => e.data),
  });
  const page = useQuery({ ...list(cursor), placeholderData: keepPreviousData });
  // `total` comes with the first page only.
  const first = useQuery(list(undefined));

  function filter(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    const next = new URLSearchParams();
    const s = String(form.get('search') ?? '').trim();
    if (s) next.set('search', s);
    if (form.get('subscribed')) next.set('subscribed', String(form.get('subscribed')));
    setParams(next);
    setCursors([undefined]);
    setSelected(new Set());
  }

  const rows = page.data?.contacts ?? [];
  const allSelected = rows.length > 0 && rows.every((c) => selected.has(c.id));
  const toggle = (id: string) =>
    setSelected((s) => {
      const next = new Set(s);
      if (!next.delete(id)) next.add(id);
      return next;
    });

  return (
    <>
      <form className="toolbar" role="search" onSubmit={filter} aria-label="Find contacts">
        <div className="field">
          <label htmlFor={searchId}>Search by email</label>
          <input id={searchId} name="search" type="search" defaultValue={search} key={search} maxLength={254} />
        </div>
        <div className="field">
          <label htmlFor={filterId}>Subscription</label>
          <select id={filterId} name="subscribed" defaultValue={subscribed} key={subscribed}>
            {FILTERS.map((f) => (
              <option key={f.value} value={f.value}>
                {f.label}
              </option>
            ))}
          </select>
        </div>
        <button type="submit">Apply</button>
      </form>

      <BulkActions selected={[...selected]} onDone={() => setSelected(new Set())} />

      {page.isPending ? (
        <Loading what="Loading the contacts" />
      ) : page.error ? (
        <p role="alert">{errorMessage(page.error)}</p>
      ) : rows.length === 0 ? (
        <p className="empty">{search || subscribed ? 'No contact matches.' : 'No contacts yet. Create one, import a CSV, or track an event with POST /v1/track.'}</p>
      ) : (
        <table aria-label="Contacts" aria-busy={page.isFetching}>
          <thead>
            <tr>
              <th scope="col">
                <input
                  type="checkbox"
                  aria-label="Select every contact on this page"
                  checked={allSelected}
                  onChange={() =>
                    setSelected((s) => {
                      // This page's contacts only: a selection made on other pages stays.
                      const next = new Set(s);
                      for (const c of rows) if (allSelected) next.delete(c.id);
                      else next.add(c.id);
                      return next;
                    })
                  }
                />
              </th>
              <th scope="col">Email</th>
              <th scope="col">Subscribed</th>
              <th scope="col">Fields</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((c) => (
              <tr key={c.id}>
                <td>
                  <input type="checkbox" aria-label={`Select ${c.email}`} checked={selected.has(c.id)} onChange={() => toggle(c.id)} />
                </td>
                <td>
                  <Link to={paths.screen(project.id, 'contacts', `/${encodeURIComponent(c.id)}`)}>{c.email}</Link>
                </td>
                <td>{c.subscribed ? 'Yes' : 'No'}</td>
                <td>{Object.keys(c.data).length}</td>
                <td>
                  <time dateTime={c.createdAt}>{new Date(c.createdAt).toLocaleString()}</time>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav className="pager" aria-label="Contact pages">
        <span>
          Page {cursors.length}
          {first.data?.total !== undefined && ` · ${first.data.total.toLocaleString()} contacts`}
        </span>
        <button type="button" disabled={cursors.length === 1} onClick={() => setCursors((c) => c.slice(0, -1))}>
          Previous page
        </button>
        <button type="button" disabled={!page.data?.hasMore || !page.data.cursor} onClick={() => setCursors((c) => [...c, page.data!.cursor!])}>
          Next page
        </button>
      </nav>
    </>
  );
}
