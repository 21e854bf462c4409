import { useInfiniteQuery } from '@tanstack/react-query';
import { apiEnvelope, errorMessage } from '../../api/client.ts';
import { Loading } from '../../app/Page.tsx';
import { display } from './data-rows.ts';
import { contactKeys, type ContactEvent } from './types.ts';

/** A contact's events newest first (GET /events/contact/:id), more on request. */
export function Timeline({ projectId, contactId }: { projectId: string; contactId: string }) {
  const events = useInfiniteQuery({
    queryKey: [...contactKeys.one(projectId, contactId), 'events'],
    queryFn: ({ pageParam }) =>
      apiEnvelope<ContactEvent[]>(`/events/contact/${encodeURIComponent(contactId)}`, { projectId, query: { limit: 20, cursor: pageParam } }),
    initialPageParam: undefined as string | undefined,
    getNextPageParam: (last) => (last.hasMore ? (last.nextCursor ?? undefined) : undefined),
  });
  const items = events.data?.pages.flatMap((p) => p.data) ?? [];
  return (
    <section aria-labelledby="timeline-title" className="card">
      <h2 id="timeline-title">Timeline</h2>
      {events.isPending ? (
        <Loading what="Loading the events" />
      ) : events.error ? (
        <p role="alert">{errorMessage(events.error)}</p>
      ) : items.length === 0 ? (
        <p className="empty">No events for this contact yet.</p>
      ) : (
        <ol className="timeline" aria-label="Events, newest first">
          {items.map((e) => (
            <li key={e.id}>
              <time dateTime={e.createdAt}>{new Date(e.createdAt).toLocaleString()}</time> <span className="mono">{e.name}</span>
              {e.system && <span className="tag">system</span>}
              {Object.keys(e.data).length > 0 && (
                <span className="event-data">
                  {Object.entries(e.data)
                    .map(([k, v]) => `${k}: ${display(v)}`)
                    .join(', ')}
                </span>
              )}
            </li>
          ))}
        </ol>
      )}
      {events.hasNextPage && (
        <button type="button" onClick={() => events.fetchNextPage()} disabled={events.isFetchingNextPage}>
          {events.isFetchingNextPage ? 'Loading…' : 'Older events'}
        </button>
      )}
    </section>
  );
}
