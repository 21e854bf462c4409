import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { Loading, Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import { listSegments, segmentKeys } from '../segments/api.ts';
import { campaignKeys, campaignPath, formatTime, STATUS_LABELS, timeZone, type Campaign } from './api.ts';
import { CampaignActions } from './CampaignActions.tsx';
import { CampaignStatsView } from './CampaignStats.tsx';

/** How often a SENDING campaign and its stats are read again. */
const SENDING_POLL_MS = 2_000;

/** One campaign: what it is, what its state allows, and its stats once it has been sent. */
export function CampaignDetail() {
  const project = useCurrentProject();
  const id = useParams().campaignId!;
  const campaign = useQuery({
    queryKey: campaignKeys.one(project.id, id),
    queryFn: () => api<Campaign>(campaignPath(id), { projectId: project.id }),
    refetchInterval: (q) => (q.state.data?.status === 'SENDING' ? SENDING_POLL_MS : false),
  });
  const segments = useQuery({ queryKey: segmentKeys.all(project.id), queryFn: () => listSegments(project.id) });

  if (campaign.isPending) return <Page title="Campaign"><Loading what="Loading the campaign" /></Page>;
  if (campaign.error) {
    return (
      <Page title="Campaign">
        <p role="alert">{errorMessage(campaign.error)}</p>
        <Link to={paths.screen(project.id, 'campaigns')}>Back to the campaigns</Link>
      </Page>
    );
  }
  const c = campaign.data;
  const segmentName = segments.data?.find((s) => s.id === c.segmentId)?.name;
  const audience =
    c.audienceType === 'ALL' ? 'All subscribed contacts' : c.audienceType === 'SEGMENT' ? `Segment ${segmentName ?? c.segmentId}` : 'Contacts matching a filter';
  const sent = c.sentAt !== null;

  return (
    <Page title={c.name}>
      <p>
        <Link to={paths.screen(project.id, 'campaigns')}>← All campaigns</Link>
      </p>
      <p>
        Status: <span className="status-badge">{STATUS_LABELS[c.status]}</span>
        {c.cancelReason && <> ({c.cancelReason})</>}
      </p>
      <section aria-labelledby="summary-title" className="card">
        <h2 id="summary-title">Summary</h2>
        <table>
          <tbody>
            <tr>
              <th scope="row">Subject</th>
              <td>{c.subject}</td>
            </tr>
            <tr>
              <th scope="row">From</th>
              <td>{c.fromName ? `${c.fromName} <${c.from}>` : c.from}</td>
            </tr>
            <tr>
              <th scope="row">Audience</th>
              <td>{audience}</td>
            </tr>
            {c.scheduledFor && (
              <tr>
                <th scope="row">Scheduled for</th>
                <td>
                  <time dateTime={c.scheduledFor}>{formatTime(c.scheduledFor)}</time> ({timeZone()})
                </td>
              </tr>
            )}
            {sent && (
              <tr>
                <th scope="row">Sending began</th>
                <td>
                  <time dateTime={c.sentAt!}>{formatTime(c.sentAt)}</time> ({timeZone()})
                </td>
              </tr>
            )}
            {c.completedAt && (
              <tr>
                <th scope="row">Completed</th>
                <td>
                  <time dateTime={c.completedAt}>{formatTime(c.completedAt)}</time>
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </section>
      {sent && <CampaignStatsView campaign={c} poll={c.status === 'SENDING' ? SENDING_POLL_MS : false} />}
      <CampaignActions campaign={c} />
    </Page>
  );
}
