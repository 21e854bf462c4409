import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { isSystemEventName } from '../../../../domain/events/names.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { Loading } from '../../app/Page.tsx';
import type { EventStats } from './types.ts';

/**
 * Every event name of the project with its count, most frequent first (GET /events/stats, no
 * range). A custom name can be deleted with all its records (DELETE /events/:name, after a
 * confirmation); the API refuses one a segment or workflow uses, and says which.
 */
export function EventNames({ projectId, onPick }: { projectId: string; onPick: (name: string) => void }) {
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const confirming = useDisclosure<string>();
  const stats = useQuery({ queryKey: ['events', projectId, 'stats', 'all'], queryFn: () => api<EventStats>('/events/stats', { projectId }) });
  const remove = useMutation({
    mutationFn: (name: string) => api<{ name: string; deleted: number }>(`/events/${encodeURIComponent(name)}`, { method: 'DELETE', projectId }),
    onSuccess: (result) => {
      confirming.close();
      say(`${result.deleted} ${result.name} events deleted`);
      return queryClient.invalidateQueries({ queryKey: ['events', projectId] });
    },
  });
  return (
    <section aria-labelledby="names-title" className="card">
      <h2 id="names-title">Event names</h2>
      {remove.error && <p role="alert">{errorMessage(remove.error)}</p>}
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
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
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
                <td>
                  {isSystemEventName(e.name) ? (
                    <span className="hint">system</span>
                  ) : confirming.open === e.name ? (
                    <span className="confirm" role="group" aria-label={`Confirm deleting ${e.name}`} {...confirming.dismissable}>
                      Delete all {e.count.toLocaleString()}?{' '}
                      <button type="button" className="danger" autoFocus disabled={remove.isPending} onClick={() => remove.mutate(e.name)}>
                        Delete {e.name} events
                      </button>{' '}
                      <button type="button" onClick={confirming.close}>
                        Keep
                      </button>
                    </span>
                  ) : (
                    <button type="button" ref={confirming.opener(e.name)} onClick={() => { remove.reset(); confirming.show(e.name); }} aria-label={`Delete ${e.name}…`}>
                      Delete…
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr>
              <th scope="row">Total</th>
              <td>{stats.data.total.toLocaleString()}</td>
              <td />
            </tr>
          </tfoot>
        </table>
      )}
    </section>
  );
}
