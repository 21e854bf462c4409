import type { Platform } from '../../runtime/platform.ts';
import { notFound } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { CHUNK, chunkId, JOBS_TOPIC, jobPayloads, jobs, jobView, type ImportRow, type JobDoc, type JobError, type JobType } from './collection.ts';
import { parseContactsCsv } from './csv.ts';

/** Writes the job and its input, then queues it: accepted means it will run, even after a crash. */
async function queueJob(p: Platform, projectId: string, type: JobType, items: ImportRow[] | string[], rejected: JobError[] = []) {
  const job: JobDoc = {
    _id: newId(),
    projectId,
    type,
    status: 'QUEUED',
    total: items.length + rejected.length,
    processed: rejected.length,
    created: 0,
    updated: 0,
    failed: rejected.length,
    errors: rejected,
    cursor: 0,
    items: items.length,
    createdAt: nowIso(),
    finishedAt: null,
  };
  const chunks = [];
  for (let at = 0; at < items.length; at += CHUNK) {
    chunks.push({ _id: chunkId(job._id, at), jobId: job._id, items: items.slice(at, at + CHUNK) as ImportRow[] | string[] });
  }
  await jobPayloads(p.store).insertMany(chunks);
  await jobs(p.store).insertOne(job);
  await p.pubsub.publish(JOBS_TOPIC, { jobId: job._id });
  return jobView(job);
}

export async function queueImport(p: Platform, projectId: string, file: Buffer) {
  const { rows, rejected } = parseContactsCsv(file);
  return queueJob(p, projectId, 'IMPORT', rows, rejected);
}

export const BULK_TYPES = {
  subscribe: 'BULK_SUBSCRIBE',
  unsubscribe: 'BULK_UNSUBSCRIBE',
  delete: 'BULK_DELETE',
} as const satisfies Record<string, JobType>;

export async function queueBulk(p: Platform, projectId: string, action: keyof typeof BULK_TYPES, contactIds: string[]) {
  // The same id twice is one contact: do it once.
  return queueJob(p, projectId, BULK_TYPES[action], [...new Set(contactIds)]);
}

export async function getJob(p: Platform, projectId: string, jobId: string, kind: 'import' | 'bulk') {
  const job = await jobs(p.store).findOne({ _id: jobId, projectId });
  if (!job || (kind === 'import') !== (job.type === 'IMPORT')) throw notFound('Job');
  return jobView(job);
}
