import { useQuery } from '@tanstack/react-query';
import { useId, useMemo, useState } from 'react';
import { Link } from 'react-router';
import { CartesianGrid, Legend, Line, LineChart, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { api, apiEnvelope, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { ChartFrame } from '../../app/ChartFrame.tsx';
import { Loading, Page } from '../../app/Page.tsx';
import { paths } from '../../paths.ts';
import { EMAIL_EVENTS, RANGES, rate, windowOf } from './series.ts';

interface Counts {
  total: number;
  events: { name: string; count: number }[];
}

interface Stats extends Counts {
  buckets: (Counts & { start: string; end: string })[];
}

interface EventRecord {
  id: string;
  name: string;
  contactId: string;
  createdAt: string;
}

const countOf = (stats: Counts | undefined, name: string) => stats?.events.find((e) => e.name === name)?.count ?? 0;

/** The project at a glance: email outcomes over a range (totals, rates, a chart), contacts, recent events. */
export default function Overview() {
  const project = useCurrentProject();
  const [rangeIndex, setRangeIndex] = useState(1);
  const range = RANGES[rangeIndex];
  // Fixed per range choice, so a re-render does not move the window (and refetch).
  const span = useMemo(() => windowOf(range.days, range.bucketDays, new Date()), [range]);
  const rangeId = useId();

  // One call: the totals and every bucket of the chart (`interval`, counted from the local midnight `start`).
  const stats = useQuery({
    queryKey: ['overview', project.id, 'stats', range.days],
    queryFn: () =>
      api<Stats>('/events/stats', {
        projectId: project.id,
        query: { start: span.start.toISOString(), end: span.end.toISOString(), interval: range.interval },
      }),
  });
  const series = useMemo(
    () =>
      stats.data?.buckets.map((b): Record<string, string | number> => ({
        label: new Date(b.start).toLocaleDateString(undefined, { month: 'short', day: 'numeric' }),
        ...Object.fromEntries(EMAIL_EVENTS.map((e) => [e.label, countOf(b, e.name)])),
      })),
    [stats.data],
  );
  const contacts = useQuery({
    queryKey: ['overview', project.id, 'contacts'],
    queryFn: () => api<{ total?: number }>('/contacts', { projectId: project.id, query: { limit: 1 } }),
  });
  const recent = useQuery({
    queryKey: ['overview', project.id, 'recent'],
    queryFn: () => apiEnvelope<EventRecord[]>('/events', { projectId: project.id, query: { limit: 10 } }),
  });

  const sent = countOf(stats.data, 'email.sent');
  const delivered = countOf(stats.data, 'email.delivery');
  const rates: Record<string, string> = {
    'email.delivery': `${rate(delivered, sent)} of sent`,
    'email.open': `${rate(countOf(stats.data, 'email.open'), delivered)} of delivered`,
    'email.click': `${rate(countOf(stats.data, 'email.click'), delivered)} of delivered`,
    'email.bounce': `${rate(countOf(stats.data, 'email.bounce'), sent)} of sent`,
    'email.complaint': `${rate(countOf(stats.data, 'email.complaint'), delivered)} of delivered`,
  };

  return (
    <Page
      title="Overview"
      actions={
        <div className="field inline">
          <label htmlFor={rangeId}>Range</label>
          <select id={rangeId} value={rangeIndex} onChange={(e) => setRangeIndex(Number(e.target.value))}>
            {RANGES.map((r, i) => (
              <option key={r.days} value={i}>
                {r.label}
              </option>
            ))}
          </select>
        </div>
      }
    >
      <section aria-labelledby="email-title">
        <h2 id="email-title">Email, {range.label.toLowerCase()}</h2>
        {stats.error ? (
          <p role="alert">{errorMessage(stats.error)}</p>
        ) : (
          <dl className="stats" aria-busy={stats.isPending}>
            {EMAIL_EVENTS.map((e) => (
              <div className="stat" key={e.name}>
                <dt>{e.label}</dt>
                <dd>{stats.isPending ? '…' : countOf(stats.data, e.name).toLocaleString()}</dd>
                {rates[e.name] && !stats.isPending && <dd className="hint">{rates[e.name]}</dd>}
              </div>
            ))}
            <div className="stat">
              <dt>Contacts</dt>
              <dd>{contacts.isPending ? '…' : contacts.error ? '—' : (contacts.data.total ?? 0).toLocaleString()}</dd>
            </div>
          </dl>
        )}
      </section>

      <section aria-labelledby="chart-title" className="card">
        <h2 id="chart-title">Over time ({range.bucketDays === 1 ? 'per day' : 'per week'})</h2>
        {stats.isPending ? (
          <Loading what="Loading the chart" />
        ) : stats.error ? (
          <p role="alert">{errorMessage(stats.error)}</p>
        ) : !series || series.every((row) => EMAIL_EVENTS.every((e) => row[e.label] === 0)) ? (
          <p className="empty">No email in this range yet. Send one with POST /v1/send, a campaign or a workflow.</p>
        ) : (
          <>
            <ChartFrame label={`Email events per ${range.bucketDays === 1 ? 'day' : 'week'}, ${range.label.toLowerCase()}`}>
              <ResponsiveContainer width="100%" height={280}>
                {/* No keyboard layer inside a picture (see ChartFrame): the table is the chart's text. */}
                <LineChart data={series} margin={{ top: 8, right: 16, bottom: 8, left: 0 }} accessibilityLayer={false}>
                  <CartesianGrid stroke="#e5e7eb" />
                  <XAxis dataKey="label" />
                  <YAxis allowDecimals={false} />
                  <Tooltip />
                  <Legend />
                  {EMAIL_EVENTS.map((e) => (
                    <Line key={e.name} type="linear" dataKey={e.label} stroke={e.color} dot={false} isAnimationActive={false} />
                  ))}
                </LineChart>
              </ResponsiveContainer>
            </ChartFrame>
            <details>
              <summary>The chart's figures</summary>
              <table aria-label={`Email events per ${range.bucketDays === 1 ? 'day' : 'week'}`}>
                <thead>
                  <tr>
                    <th scope="col">{range.bucketDays === 1 ? 'Day' : 'Week from'}</th>
                    {EMAIL_EVENTS.map((e) => (
                      <th scope="col" key={e.name}>{e.label}</th>
                    ))}
                  </tr>
                </thead>
                <tbody>
                  {series.map((row) => (
                    <tr key={row.label}>
                      <th scope="row">{row.label}</th>
                      {EMAIL_EVENTS.map((e) => (
                        <td key={e.name}>{Number(row[e.label]).toLocaleString()}</td>
                      ))}
                    </tr>
                  ))}
                </tbody>
              </table>
            </details>
          </>
        )}
      </section>

      <section aria-labelledby="recent-title" className="card">
        <h2 id="recent-title">Recent events</h2>
        {recent.isPending ? (
          <Loading what="Loading the events" />
        ) : recent.error ? (
          <p role="alert">{errorMessage(recent.error)}</p>
        ) : recent.data.data.length === 0 ? (
          <p className="empty">No events yet. Track one with POST /v1/track.</p>
        ) : (
          <table>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Contact</th>
                <th scope="col">When</th>
              </tr>
            </thead>
            <tbody>
              {recent.data.data.map((e) => (
                <tr key={e.id}>
                  <td className="mono">{e.name}</td>
                  <td>
                    <Link to={paths.screen(project.id, 'contacts', `/${encodeURIComponent(e.contactId)}`)}>{e.contactId}</Link>
                  </td>
                  <td>
                    <time dateTime={e.createdAt}>{new Date(e.createdAt).toLocaleString()}</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </Page>
  );
}
