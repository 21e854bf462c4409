import { useQuery } from '@tanstack/react-query';
import { api, errorMessage } from '../../api/client.ts';
import { Loading } from '../../app/Page.tsx';
import type { EventStats } from './types.ts';

/** Every event name of the project with its count, most frequent first (GET /events/stats, no range). */
export function EventNames({ projectId, onPick }: { projectId: string; onPick: (name: string) => void }) {
  const stats = useQuery({ queryKey: ['events', projectId, 'stats', 'all'], queryFn: () => api<EventStats>('/events/stats', { projectId }) });
  return (
    <section aria-labelledby="names-title" className="card">
      <h2 id="names-title">Event names</h2>
      {stats.isPending ? (
        <Loading what="Loading the event names" />
      ) : stats.error ? (
        <p role="alert">{errorMessage(stats.error)}</p>
      ) : stats.data.events.length === 0 ? (
        <p className="empty">No events yet. Track one with POST /v1/track.</p>
      ) : (
        <table aria-label="Event names">
          <thead>
            <tr>
              <th scope="col">Event</th>
              <th scope="col">Count</th>
            </tr>
          </thead>
          <tbody>
            {stats.data.events.map((e) => (
              <tr key={e.name}>
                <td>
                  <button type="button" className="link-button mono" onClick={() => onPick(e.name)} aria-label={`Explore ${e.name}`}>
                    {e.name}
                  </button>
                </td>
                <td>{e.count.toLocaleString()}</td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row">Total</th>
              <td>{stats.data.total.toLocaleString()}</td>
            </tr>
          </tfoot>
        </table>
      )}
    </section>
  );
}
