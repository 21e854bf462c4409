import type { Platform } from '../../runtime/platform.ts';
import { notFound } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { CHUNK, chunkId, fileId, JOBS_TOPIC, jobFiles, jobPayloads, jobs, jobView, type ImportRow, type JobDoc, type JobPayloadDoc, type JobType } from './collection.ts';
import { checkCsvHead } from './csv.ts';

const newJob = (projectId: string, type: JobType): JobDoc => ({
  _id: newId(),
  projectId,
  type,
  status: 'QUEUED',
  total: 0,
  processed: 0,
  created: 0,
  updated: 0,
  failed: 0,
  errors: [],
  cursor: 0,
  items: 0,
  createdAt: nowIso(),
  finishedAt: null,
});

/** A job's input as its payload documents, one per chunk (`<jobId>/<n>`). */
export function chunksOf(jobId: string, items: ImportRow[] | string[]): JobPayloadDoc[] {
  const chunks: JobPayloadDoc[] = [];
  for (let at = 0; at < items.length; at += CHUNK) {
    chunks.push({ _id: chunkId(jobId, at), jobId, items: items.slice(at, at + CHUNK) as ImportRow[] | string[] });
  }
  return chunks;
}

/** Writes the job after its input, then queues it: accepted means it will run, even after a crash. */
async function queueJob(p: Platform, job: JobDoc) {
  await jobs(p.store).insertOne(job);
  await p.pubsub.publish(JOBS_TOPIC, { jobId: job._id });
  return jobView(job);
}

/**
 * Checks the file's header, stores the file and queues the import: the rows are read by the
 * job, so a large file never holds the request (nor, parsed in one go, every other request).
 */
export async function queueImport(p: Platform, projectId: string, file: Buffer) {
  await checkCsvHead(file);
  const job: JobDoc = { ...newJob(projectId, 'IMPORT'), unreadFile: true };
  await jobFiles(p.store).insertOne({ _id: fileId(job._id), jobId: job._id, csv: file.toString('base64') });
  return queueJob(p, job);
}

export const BULK_TYPES = {
  subscribe: 'BULK_SUBSCRIBE',
  unsubscribe: 'BULK_UNSUBSCRIBE',
  delete: 'BULK_DELETE',
} as const satisfies Record<string, JobType>;

export async function queueBulk(p: Platform, projectId: string, action: keyof typeof BULK_TYPES, contactIds: string[]) {
  // The same id twice is one contact: do it once.
  const ids = [...new Set(contactIds)];
  const job: JobDoc = { ...newJob(projectId, BULK_TYPES[action]), total: ids.length, items: ids.length };
  await jobPayloads(p.store).insertMany(chunksOf(job._id, ids));
  return queueJob(p, job);
}

export async function getJob(p: Platform, projectId: string, jobId: string, kind: 'import' | 'bulk') {
  const job = await jobs(p.store).findOne({ _id: jobId, projectId });
  if (!job || (kind === 'import') !== (job.type === 'IMPORT')) throw notFound('Job');
  return jobView(job);
}
