import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading, Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import { listSegments, segmentKeys } from './api.ts';

/** Every segment of the project, newest first, with its member count now. */
export function SegmentList() {
  const project = useCurrentProject();
  const segments = useQuery({ queryKey: segmentKeys.all(project.id), queryFn: () => listSegments(project.id) });
  return (
    <Page
      title="Segments"
      actions={
        <Link className="button primary" to={paths.screen(project.id, 'segments', '/new')}>
          New segment
        </Link>
      }
    >
      {segments.isPending ? (
        <Loading what="Loading the segments" />
      ) : segments.error ? (
        <p role="alert">{errorMessage(segments.error)}</p>
      ) : segments.data.length === 0 ? (
        <p className="empty">No segments yet. A segment is a group of contacts: by a condition (dynamic) or by hand (static).</p>
      ) : (
        <table>
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
            {segments.data.map((s) => (
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
    </Page>
  );
}
