import { useQuery } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { Bar, BarChart, CartesianGrid, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { api, errorMessage } from '../../api/client.ts';
import { ChartFrame } from '../../app/ChartFrame.tsx';
import { Loading } from '../../app/Page.tsx';
import type { EventStats } from './types.ts';

const DAY_MS = 86_400_000;
const dateInput = (d: Date) => new Date(d.getTime() - d.getTimezoneOffset() * 60_000).toISOString().slice(0, 10);

/** A day of the user's calendar as an instant: its first (or last) millisecond in their time zone. */
const instant = (day: string, endOfDay: boolean) => {
  const d = new Date(`${day}T00:00:00`);
  if (endOfDay) d.setHours(23, 59, 59, 999);
  return d.toISOString();
};

/** Counts per event name between two days of the user's calendar, both included (GET /events/stats). */
export function EventStatsChart({ projectId }: { projectId: string }) {
  const [range, setRange] = useState(() => ({ start: dateInput(new Date(Date.now() - 29 * DAY_MS)), end: dateInput(new Date()) }));
  const startId = useId();
  const endId = useId();
  const stats = useQuery({
    queryKey: ['events', projectId, 'stats', range.start, range.end],
    queryFn: () => api<EventStats>('/events/stats', { projectId, query: { start: instant(range.start, false), end: instant(range.end, true) } }),
    enabled: range.start !== '' && range.end !== '',
  });

  function apply(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setRange({ start: String(form.get('start') ?? ''), end: String(form.get('end') ?? '') });
  }

  return (
    <section aria-labelledby="stats-title" className="card">
      <h2 id="stats-title">Counts over a range</h2>
      <form className="toolbar" onSubmit={apply} aria-label="Range">
        <div className="field">
          <label htmlFor={startId}>From</label>
          <input id={startId} name="start" type="date" defaultValue={range.start} required />
        </div>
        <div className="field">
          <label htmlFor={endId}>To</label>
          <input id={endId} name="end" type="date" defaultValue={range.end} required />
        </div>
        <button type="submit">Show counts</button>
      </form>
      {range.start === '' || range.end === '' ? (
        <p role="alert">Choose both days of the range.</p>
      ) : stats.isPending ? (
        <Loading what="Loading the counts" />
      ) : stats.error ? (
        <p role="alert">{errorMessage(stats.error)}</p>
      ) : stats.data.events.length === 0 ? (
        <p className="empty">No events in this range.</p>
      ) : (
        <>
          <p aria-live="polite">
            <strong>{stats.data.total.toLocaleString()}</strong> events from {range.start} to {range.end}
          </p>
          <ChartFrame label={`Events per name from ${range.start} to ${range.end}`}>
            <ResponsiveContainer width="100%" height={Math.max(160, stats.data.events.length * 32 + 40)}>
              {/* No keyboard layer inside a picture (see ChartFrame): the table is the chart's text. */}
              <BarChart data={stats.data.events} layout="vertical" margin={{ top: 8, right: 16, bottom: 8, left: 16 }} accessibilityLayer={false}>
                <CartesianGrid stroke="#e5e7eb" />
                <XAxis type="number" allowDecimals={false} />
                <YAxis type="category" dataKey="name" width={180} />
                <Tooltip />
                <Bar dataKey="count" name="Events" fill="#1d4ed8" isAnimationActive={false} />
              </BarChart>
            </ResponsiveContainer>
          </ChartFrame>
          <table aria-label="Counts in the range">
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Count</th>
              </tr>
            </thead>
            <tbody>
              {stats.data.events.map((e) => (
                <tr key={e.name}>
                  <td className="mono">{e.name}</td>
                  <td>{e.count.toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
