import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { Link } from 'react-router';
import { EXECUTION_STATUSES } from '../../../../actors/workflow-execution/behaviour.ts';
import { api, errorMessage } from '../../api/client.ts';
import { useDisclosure } from '../../app/disclosure.ts';
import { useNotices } from '../../app/notices.tsx';
import { Loading } from '../../app/Page.tsx';
import { FormError } from '../../forms/Field.tsx';
import { paths } from '../../paths.ts';
import type { Execution, Paged, Step } from './types.ts';
import { Pager } from '../../app/Pager.tsx';

const inProgress = (e: Execution) => e.status === 'RUNNING' || e.status === 'WAITING';

/**
 * The executions of the workflow, newest first, filtered by status and refreshed every few
 * seconds; cancel one or all; "Show path" highlights the steps one went through in the graph.
 */
export function Executions(props: { projectId: string; workflowId: string; steps: Step[]; shown?: string; onShow: (execution: Execution | undefined) => void }) {
  const { projectId, workflowId, steps, shown, onShow } = props;
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const [status, setStatus] = useState('');
  const [page, setPage] = useState(1);
  const confirmAll = useDisclosure();
  const statusId = useId();
  const base = `/workflows/${encodeURIComponent(workflowId)}/executions`;
  const list = useQuery({
    queryKey: ['executions', projectId, workflowId, status, page],
    queryFn: () => api<Paged & { executions: Execution[] }>(base, { projectId, query: { status, page, pageSize: 20 } }),
    placeholderData: keepPreviousData,
    refetchInterval: 3_000,
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['executions', projectId, workflowId] });
  const cancel = useMutation({
    mutationFn: (id: string) => api<Execution>(`${base}/${encodeURIComponent(id)}`, { method: 'DELETE', projectId }),
    onSuccess: () => (say('Execution cancelled'), refresh()),
  });
  const cancelAll = useMutation({
    mutationFn: () => api<{ cancelled: number }>(`${base}/cancel-all`, { method: 'POST', projectId }),
    onSuccess: (r) => (say(`${r.cancelled} executions cancelled`), confirmAll.close(), refresh()),
  });
  const nameOf = (id: string | null) => (id ? (steps.find((s) => s.id === id)?.name ?? 'a removed step') : '—');
  const shownExecution = list.data?.executions.find((e) => e.id === shown);

  return (
    <section className="card" aria-labelledby="executions-title">
      <header className="page-header">
        <h2 id="executions-title">Executions</h2>
        <div className="field inline">
          <label htmlFor={statusId}>Status</label>
          <select id={statusId} value={status} onChange={(e) => (setStatus(e.target.value), setPage(1))}>
            <option value="">Any status</option>
            {EXECUTION_STATUSES.filter((s) => s !== 'PENDING').map((s) => (
              <option key={s} value={s}>
                {s.charAt(0) + s.slice(1).toLowerCase()}
              </option>
            ))}
          </select>
        </div>
      </header>
      <FormError message={cancel.error ? errorMessage(cancel.error) : cancelAll.error ? errorMessage(cancelAll.error) : undefined} />
      {shownExecution && (
        <p className="path-text" role="status">
          Path of the execution for {shownExecution.contactId}: {shownExecution.path.map(nameOf).join(' → ') || 'not recorded (started before paths were kept)'}
        </p>
      )}
      {list.isPending ? (
        <Loading what="Loading the executions" />
      ) : list.error ? (
        <p role="alert">{errorMessage(list.error)}</p>
      ) : list.data.executions.length === 0 ? (
        <p className="empty">{status ? 'No execution with this status.' : 'No execution yet: one starts when the trigger event is recorded for a contact while the workflow is enabled.'}</p>
      ) : (
        <>
          <table aria-busy={list.isFetching}>
            <thead>
              <tr>
                <th scope="col">Contact</th>
                <th scope="col">Status</th>
                <th scope="col">At step</th>
                <th scope="col">Started</th>
                <th scope="col">Reason</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {list.data.executions.map((e) => (
                <tr key={e.id} className={e.id === shown ? 'shown' : undefined}>
                  <td className="mono">
                    <Link to={paths.screen(projectId, 'contacts', `/${encodeURIComponent(e.contactId)}`)}>{e.contactId}</Link>
                  </td>
                  <td>
                    {e.status}
                    {e.status === 'WAITING' && e.wakeAt ? ` until ${new Date(e.wakeAt).toLocaleString()}` : ''}
                  </td>
                  <td>{nameOf(e.currentStepId)}</td>
                  <td>
                    <time dateTime={e.createdAt}>{new Date(e.createdAt).toLocaleString()}</time>
                  </td>
                  <td>{e.reason ?? ''}</td>
                  <td>
                    <button type="button" aria-pressed={e.id === shown} onClick={() => onShow(e.id === shown ? undefined : e)}>
                      {e.id === shown ? 'Hide path' : 'Show path'}
                    </button>{' '}
                    {inProgress(e) && (
                      <button type="button" onClick={() => cancel.mutate(e.id)} disabled={cancel.isPending}>
                        Cancel
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          <Pager page={list.data.page} totalPages={list.data.totalPages} total={list.data.total} onPage={setPage} noun="executions" />
        </>
      )}
      {confirmAll.open ? (
        <div className="confirm" role="group" aria-label="Confirm cancelling every execution" {...confirmAll.dismissable}>
          <p>Every running or waiting execution of this workflow stops where it is.</p>
          <button type="button" className="danger" onClick={() => cancelAll.mutate()} disabled={cancelAll.isPending} autoFocus>
            Cancel them all
          </button>{' '}
          <button type="button" onClick={confirmAll.close}>
            Keep them
          </button>
        </div>
      ) : (
        <button type="button" ref={confirmAll.opener(true)} onClick={() => confirmAll.show(true)}>
          Cancel all executions
        </button>
      )}
    </section>
  );
}
