import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading, Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import { CursorPager, useCursorPages } from '../../app/CursorPager.tsx';
import { segmentKeys, segmentPage } from './api.ts';

/** The project's segments, newest first, with their member count now, a page at a time. */
export function SegmentList() {
  const project = useCurrentProject();
  const pages = useCursorPages();
  const page = useQuery({
    queryKey: [...segmentKeys.all(project.id), 'page', pages.cursor],
    queryFn: () => segmentPage(project.id, pages.cursor),
    placeholderData: keepPreviousData,
  });
  return (
    <Page
      title="Segments"
      actions={
        <Link className="button primary" to={paths.screen(project.id, 'segments', '/new')}>
          New segment
        </Link>
      }
    >
      {page.isPending ? (
        <Loading what="Loading the segments" />
      ) : page.error ? (
        <p role="alert">{errorMessage(page.error)}</p>
      ) : page.data.data.length === 0 ? (
        <p className="empty">No segments yet. A segment is a group of contacts: by a condition (dynamic) or by hand (static).</p>
      ) : (
        <table aria-busy={page.isPlaceholderData}>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Members</th>
              <th scope="col">Membership events</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {page.data.data.map((s) => (
              <tr key={s.id}>
                <td>
                  <Link to={paths.screen(project.id, 'segments', `/${encodeURIComponent(s.id)}`)}>{s.name}</Link>
                </td>
                <td>{s.type === 'DYNAMIC' ? 'Dynamic' : 'Static'}</td>
                <td>{s.memberCount.toLocaleString()}</td>
                <td>{s.trackMembership ? 'Tracked' : 'Off'}</td>
                <td>
                  <time dateTime={s.createdAt}>{new Date(s.createdAt).toLocaleDateString()}</time>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {page.data && (page.data.hasMore || pages.number > 1) && <CursorPager pages={pages} nextCursor={page.data.nextCursor} label="Segment pages" />}
    </Page>
  );
}
