import { useQuery } from '@tanstack/react-query';
import { useEffect } from 'react';
import { api, errorMessage } from '../../api/client.ts';
import type { Job } from './types.ts';

const finished = (job: Job | undefined) => job?.status === 'COMPLETED' || job?.status === 'FAILED';

/** Polls a job's status (every half second until it finishes); `onFinished` runs once. */
export function useJob(projectId: string, path: string | null, onFinished?: (job: Job) => void) {
  const query = useQuery({
    queryKey: ['job', projectId, path],
    queryFn: () => api<Job>(path!, { projectId }),
    enabled: path !== null,
    refetchInterval: (q) => (finished(q.state.data) || q.state.error ? false : 500),
  });
  const done = finished(query.data);
  useEffect(() => {
    if (done && query.data) onFinished?.(query.data);
    // Once per job: the status stops changing when it is finished.
  }, [done, query.data?.id]);
  return query;
}

const STATUS: Record<Job['status'], string> = { QUEUED: 'Queued', RUNNING: 'Running', COMPLETED: 'Completed', FAILED: 'Failed' };

/**
 * A job's progress bar (processed of total), its counts, and the rows or contacts it could not
 * process. The status line is a live region, so the end is announced.
 */
export function JobProgress({ label, job, error }: { label: string; job?: Job; error?: unknown }) {
  if (error) return <p role="alert">{errorMessage(error)}</p>;
  if (!job) return <p role="status">Starting…</p>;
  const known = job.total > 0;
  return (
    <div className="job">
      <label htmlFor={`job-${job.id}`}>{label}</label>
      <progress id={`job-${job.id}`} max={known ? job.total : undefined} value={known ? job.processed : job.status === 'COMPLETED' ? 1 : undefined} />
      <p role="status" aria-live="polite">
        <strong>{STATUS[job.status]}</strong>: {job.processed.toLocaleString()} of {known ? job.total.toLocaleString() : '…'} processed
        {job.type === 'IMPORT' ? `, ${job.created.toLocaleString()} created, ${job.updated.toLocaleString()} updated` : ''}, {job.failed.toLocaleString()} failed
      </p>
      {job.errors.length > 0 && (
        <table aria-label={`${label}: errors`}>
          <thead>
            <tr>
              <th scope="col">{job.type === 'IMPORT' ? 'Row' : 'Contact'}</th>
              <th scope="col">Error</th>
            </tr>
          </thead>
          <tbody>
            {job.errors.map((e, i) => (
              <tr key={i}>
                <td className="mono">{e.row ?? e.contactId ?? '—'}</td>
                <td>{e.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
