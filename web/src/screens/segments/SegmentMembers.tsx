import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import type { Contact } from '../../../../domain/contacts/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import { segmentKeys, type Segment } from './api.ts';
import { Pager } from '../../app/Pager.tsx';

interface ContactPage {
  contacts: Contact[];
  page: number;
  pageSize: number;
}

const PAGE_SIZE = 20;

/**
 * The contacts in the segment now, newest first, a page at a time. Paged by the segment's member
 * count (`total=false`: the API does not count them a second time).
 */
export function SegmentMembers({ segment }: { segment: Segment }) {
  const project = useCurrentProject();
  const [page, setPage] = useState(1);
  const members = useQuery({
    queryKey: [...segmentKeys.one(project.id, segment.id), 'contacts', page, segment.updatedAt, segment.memberCount],
    queryFn: () =>
      api<ContactPage>(`/segments/${encodeURIComponent(segment.id)}/contacts`, { projectId: project.id, query: { page, pageSize: PAGE_SIZE, total: 'false' } }),
    placeholderData: keepPreviousData,
  });
  return (
    <section aria-labelledby="members-title" className="card">
      <h2 id="members-title">Contacts in the segment</h2>
      {members.isPending ? (
        <Loading what="Loading the contacts" />
      ) : members.error ? (
        <p role="alert">{errorMessage(members.error)}</p>
      ) : segment.memberCount === 0 && members.data.contacts.length === 0 ? (
        <p className="empty">No contact is in this segment now.</p>
      ) : (
        <>
          <table aria-busy={members.isFetching}>
            <thead>
              <tr>
                <th scope="col">Email</th>
                <th scope="col">Subscribed</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {members.data.contacts.map((c) => (
                <tr key={c.id}>
                  <td>
                    <Link to={paths.screen(project.id, 'contacts', `/${encodeURIComponent(c.id)}`)}>{c.email}</Link>
                  </td>
                  <td>{c.subscribed ? 'Yes' : 'No'}</td>
                  <td>
                    <time dateTime={c.createdAt}>{new Date(c.createdAt).toLocaleDateString()}</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager page={members.data.page} totalPages={Math.ceil(segment.memberCount / PAGE_SIZE)} total={segment.memberCount} onPage={setPage} noun="contacts" />
        </>
      )}
    </section>
  );
}
