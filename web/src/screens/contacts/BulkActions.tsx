import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { JobProgress, useJob } from './JobProgress.tsx';
import { contactKeys, type Job } from './types.ts';

type Action = 'subscribe' | 'unsubscribe' | 'delete';
const LABEL: Record<Action, string> = { subscribe: 'Subscribe', unsubscribe: 'Unsubscribe', delete: 'Delete' };

/**
 * Subscribe, unsubscribe or delete the selected contacts with one bulk job
 * (POST /contacts/bulk-<action>), followed to its end (GET /contacts/bulk/:jobId). Delete asks first.
 */
export function BulkActions({ selected, onDone }: { selected: string[]; onDone: () => void }) {
  const project = useCurrentProject();
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const confirming = useDisclosure();
  const [running, setRunning] = useState<{ action: Action; jobId: string } | null>(null);
  const start = useMutation({
    mutationFn: (action: Action) =>
      api<Job & { jobId: string }>(`/contacts/bulk-${action}`, { method: 'POST', body: { contactIds: selected }, projectId: project.id }).then((job) => ({ action, jobId: job.jobId })),
    onSuccess: (started) => {
      confirming.close();
      setRunning(started);
    },
  });
  const job = useJob(project.id, running && `/contacts/bulk/${encodeURIComponent(running.jobId)}`, (done) => {
    say(`${LABEL[running!.action]}: ${done.processed - done.failed} of ${done.total} contacts done`);
    onDone();
    return queryClient.invalidateQueries({ queryKey: contactKeys.all(project.id) });
  });

  return (
    <div className="bulk" role="group" aria-label="Bulk actions">
      <p>
        <strong>{selected.length}</strong> selected
      </p>
      <button type="button" disabled={selected.length === 0 || start.isPending} onClick={() => start.mutate('subscribe')}>
        Subscribe selected
      </button>
      <button type="button" disabled={selected.length === 0 || start.isPending} onClick={() => start.mutate('unsubscribe')}>
        Unsubscribe selected
      </button>
      {confirming.open ? (
        <span className="confirm" role="group" aria-label="Confirm delete" {...confirming.dismissable}>
          Delete {selected.length} contacts with their events and segment memberships? This cannot be undone.{' '}
          <button type="button" className="danger" autoFocus onClick={() => start.mutate('delete')} disabled={start.isPending}>
            Delete {selected.length} contacts
          </button>{' '}
          <button type="button" onClick={confirming.close}>
            Keep them
          </button>
        </span>
      ) : (
        <button type="button" ref={confirming.opener(true)} disabled={selected.length === 0} onClick={() => confirming.show(true)}>
          Delete selected
        </button>
      )}
      {start.error && <p role="alert">{errorMessage(start.error)}</p>}
      {running && <JobProgress label={`${LABEL[running.action]} progress`} job={job.data} error={job.error} />}
    </div>
  );
}
