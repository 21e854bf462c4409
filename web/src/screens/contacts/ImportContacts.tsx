import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useId, useState, type FormEvent } from 'react';
import { api, errorMessage } from '../../api/client.ts';
import { useCurrentProject } from '../../api/projects.ts';
import { useNotices } from '../../app/notices.tsx';
import { FormError } from '../../forms/Field.tsx';
import { JobProgress, useJob } from './JobProgress.tsx';
import { contactKeys, type Job } from './types.ts';

/**
 * CSV import: upload the file (POST /contacts/import), then follow the job (GET
 * /contacts/import/:jobId) with a progress bar and the rows it could not import.
 */
export function ImportContacts() {
  const project = useCurrentProject();
  const queryClient = useQueryClient();
  const { say } = useNotices();
  const fileId = useId();
  const [jobId, setJobId] = useState<string | null>(null);
  const [missing, setMissing] = useState(false);
  const upload = useMutation({
    mutationFn: (file: File) => {
      const body = new FormData();
      body.append('file', file);
      return api<Job & { jobId: string }>('/contacts/import', { method: 'POST', body, projectId: project.id });
    },
    onSuccess: (job) => setJobId(job.jobId),
  });
  const job = useJob(project.id, jobId && `/contacts/import/${encodeURIComponent(jobId)}`, (done) => {
    say(`Import ${done.status === 'COMPLETED' ? 'completed' : 'failed'}: ${done.created} created, ${done.updated} updated, ${done.failed} failed`);
    return queryClient.invalidateQueries({ queryKey: contactKeys.all(project.id) });
  });

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const file = (new FormData(event.currentTarget).get('file') as File | null) ?? null;
    setMissing(!file || file.size === 0);
    if (file && file.size > 0) {
      setJobId(null);
      upload.mutate(file);
    }
  }

  return (
    <section aria-labelledby="import-title" className="card">
      <h2 id="import-title">Import from CSV</h2>
      <p className="hint">
        An <code>email</code> column is required; every other column becomes a data field. Up to 5 MB. Existing contacts are updated.
      </p>
      <form onSubmit={submit} noValidate className="inline-form">
        <FormError message={upload.error ? errorMessage(upload.error) : undefined} />
        <div className="field">
          <label htmlFor={fileId}>CSV file</label>
          <input id={fileId} name="file" type="file" accept=".csv,text/csv" aria-invalid={missing || undefined} aria-describedby={missing ? `${fileId}-error` : undefined} />
          {missing && (
            <p className="field-error" id={`${fileId}-error`}>
              Choose a CSV file
            </p>
          )}
        </div>
        <button type="submit" className="primary" disabled={upload.isPending}>
          {upload.isPending ? 'Uploading…' : 'Import'}
        </button>
      </form>
      {jobId && <JobProgress label="Import progress" job={job.data} error={job.error} />}
    </section>
  );
}
