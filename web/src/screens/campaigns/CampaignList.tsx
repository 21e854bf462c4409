import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { CAMPAIGN_STATUSES, type CampaignStatus } from '../../../../actors/campaign/states.ts';
import { apiEnvelope, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading, Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import { Pager } from '../../app/Pager.tsx';
import { campaignKeys, formatTime, STATUS_LABELS, type CampaignPage } from './api.ts';

/** The project's campaigns, newest first, filtered by status (kept in the address, so it survives a reload). */
export function CampaignList() {
  const project = useCurrentProject();
  const [search, setSearch] = useSearchParams();
  const status = (CAMPAIGN_STATUSES as readonly string[]).includes(search.get('status') ?? '') ? (search.get('status') as CampaignStatus) : undefined;
  const page = Math.max(1, Number(search.get('page')) || 1);
  const list = useQuery({
    queryKey: [...campaignKeys.all(project.id), 'list', status, page],
    queryFn: async () => (await apiEnvelope<CampaignPage>('/campaigns', { projectId: project.id, query: { status, page, pageSize: 20 } })).data,
    placeholderData: keepPreviousData,
    // A sending campaign moves on by itself.
    refetchInterval: (q) => (q.state.data?.campaigns.some((c) => c.status === 'SENDING' || c.status === 'SCHEDULED') ? 5_000 : false),
  });
  const go = (next: { status?: string; page?: number }) => {
    const params = new URLSearchParams();
    const s = 'status' in next ? next.status : status;
    if (s) params.set('status', s);
    if (next.page && next.page > 1) params.set('page', String(next.page));
    setSearch(params);
  };

  return (
    <Page
      title="Campaigns"
      actions={
        <Link className="button primary" to={paths.screen(project.id, 'campaigns', '/new')}>
          New campaign
        </Link>
      }
    >
      <div className="field inline">
        <label htmlFor="campaign-status">Status</label>
        <select id="campaign-status" value={status ?? ''} onChange={(e) => go({ status: e.target.value || undefined, page: 1 })}>
          <option value="">All</option>
          {CAMPAIGN_STATUSES.map((s) => (
            <option key={s} value={s}>
              {STATUS_LABELS[s]}
            </option>
          ))}
        </select>
      </div>
      {list.isPending ? (
        <Loading what="Loading the campaigns" />
      ) : list.error ? (
        <p role="alert">{errorMessage(list.error)}</p>
      ) : list.data.total === 0 ? (
        <p className="empty">{status ? `No ${STATUS_LABELS[status].toLowerCase()} campaigns.` : 'No campaigns yet. Compose one to send to your contacts.'}</p>
      ) : (
        <>
          <table aria-busy={list.isFetching}>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Subject</th>
                <th scope="col">Recipients</th>
                <th scope="col">Scheduled or sent</th>
              </tr>
            </thead>
            <tbody>
              {list.data.campaigns.map((c) => (
                <tr key={c.id}>
                  <td>
                    <Link to={paths.screen(project.id, 'campaigns', `/${encodeURIComponent(c.id)}`)}>{c.name}</Link>
                  </td>
                  <td>
                    <span className="status-badge">{STATUS_LABELS[c.status]}</span>
                  </td>
                  <td>{c.subject}</td>
                  <td>{c.recipientCount.toLocaleString()}</td>
                  <td>{formatTime(c.sentAt ?? c.scheduledFor)}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager page={list.data.page} totalPages={list.data.totalPages} total={list.data.total} onPage={(p) => go({ page: p })} noun="campaigns" />
        </>
      )}
    </Page>
  );
}
