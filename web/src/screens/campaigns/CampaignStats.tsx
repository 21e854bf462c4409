import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading } from '../../app/Page.tsx';
import { rate } from '../overview/series.ts';
import { campaignKeys, campaignPath, type Campaign, type CampaignStats } from './api.ts';

/** The outcomes of the campaign's emails with their rates; read again every `poll` ms while it sends. */
export function CampaignStatsView({ campaign, poll }: { campaign: Campaign; poll: number | false }) {
  const project = useCurrentProject();
  const stats = useQuery({
    // Read again whenever the campaign changes (SENDING → SENT above all: the last outcomes).
    queryKey: [...campaignKeys.one(project.id, campaign.id), 'stats', campaign.status, campaign.updatedAt],
    queryFn: () => api<CampaignStats>(`${campaignPath(campaign.id)}/stats`, { projectId: project.id }),
    refetchInterval: poll,
    placeholderData: keepPreviousData,
  });
  const recipients = campaign.recipientCount;
  return (
    <section aria-labelledby="stats-title" className="card">
      <h2 id="stats-title">Stats{campaign.status === 'SENDING' ? ' (sending: updated every few seconds)' : ''}</h2>
      {stats.isPending ? (
        <Loading what="Loading the stats" />
      ) : stats.error ? (
        <p role="alert">{errorMessage(stats.error)}</p>
      ) : (
        <dl className="stats">
          <Stat label="Recipients" value={recipients} />
          <Stat label="Delivered" value={stats.data.delivered} rate={`${rate(stats.data.delivered, recipients)} of recipients`} />
          <Stat label="Opens" value={stats.data.opens} rate={`${rate(stats.data.opens, stats.data.delivered)} of delivered`} />
          <Stat label="Clicks" value={stats.data.clicks} rate={`${rate(stats.data.clicks, stats.data.delivered)} of delivered`} />
          <Stat label="Bounces" value={stats.data.bounces} rate={`${rate(stats.data.bounces, recipients)} of recipients`} />
          <Stat label="Complaints" value={stats.data.complaints} rate={`${rate(stats.data.complaints, stats.data.delivered)} of delivered`} />
        </dl>
      )}
    </section>
  );
}

function Stat({ label, value, rate: share }: { label: string; value: number; rate?: string }) {
  return (
    <div className="stat">
      <dt>{label}</dt>
      <dd>{value.toLocaleString()}</dd>
      {share && <dd className="hint">{share}</dd>}
    </div>
  );
}
