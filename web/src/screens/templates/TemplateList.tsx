import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { Link } from 'react-router';
import { TEMPLATE_TYPES } from '../../../../domain/templates/schema.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading, Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import type { TemplatePage } from './types.ts';
import { Pager } from '../../app/Pager.tsx';

export const typeLabel = (type: string) => (type === 'MARKETING' ? 'Marketing' : 'Transactional');

/** GET /templates: newest first, searched by name, filtered by type, page by page. */
export function TemplateList() {
  const project = useCurrentProject();
  const [search, setSearch] = useState('');
  const [type, setType] = useState('');
  const [page, setPage] = useState(1);
  const searchId = useId();
  const typeId = useId();
  const list = useQuery({
    queryKey: ['templates', project.id, search, type, page],
    queryFn: () => api<TemplatePage>('/templates', { projectId: project.id, query: { search: search.trim(), type, page, pageSize: 20 } }),
    placeholderData: keepPreviousData,
  });
  const screen = (rest: string) => paths.screen(project.id, 'templates', rest);

  return (
    <Page title="Templates" actions={<Link className="button primary" to={screen('/new')}>New template</Link>}>
      <div className="filters" role="search" aria-label="Find templates">
        <div className="field inline">
          <label htmlFor={searchId}>Search by name</label>
          <input id={searchId} type="search" value={search} maxLength={200} onChange={(e) => (setSearch(e.target.value), setPage(1))} />
        </div>
        <div className="field inline">
          <label htmlFor={typeId}>Type</label>
          <select id={typeId} value={type} onChange={(e) => (setType(e.target.value), setPage(1))}>
            <option value="">All types</option>
            {TEMPLATE_TYPES.map((t) => (
              <option key={t} value={t}>
                {typeLabel(t)}
              </option>
            ))}
          </select>
        </div>
      </div>
      {list.isPending ? (
        <Loading what="Loading the templates" />
      ) : list.error ? (
        <p role="alert">{errorMessage(list.error)}</p>
      ) : list.data.templates.length === 0 ? (
        <p className="empty">{search || type ? 'No template matches.' : 'No template yet. Create one to send it with /v1/send, a campaign or a workflow.'}</p>
      ) : (
        <>
          <table aria-busy={list.isFetching}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Subject</th>
                <th scope="col">Type</th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {list.data.templates.map((t) => (
                <tr key={t.id}>
                  <td>
                    <Link to={screen(`/${encodeURIComponent(t.id)}`)}>{t.name}</Link>
                  </td>
                  <td>{t.subject}</td>
                  <td>{typeLabel(t.type)}</td>
                  <td>
                    <time dateTime={t.updatedAt}>{new Date(t.updatedAt).toLocaleString()}</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager page={list.data.page} totalPages={list.data.totalPages} total={list.data.total} onPage={setPage} noun="templates" />
        </>
      )}
    </Page>
  );
}
