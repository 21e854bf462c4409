import type { Doc, DocumentStore } from '../../ports/store.ts';
import type { ContactData } from '../contacts/schema.ts';

export const JOBS_TOPIC = 'jobs.run';

export type JobType = 'IMPORT' | 'BULK_SUBSCRIBE' | 'BULK_UNSUBSCRIBE' | 'BULK_DELETE';
export type JobStatus = 'QUEUED' | 'RUNNING' | 'COMPLETED' | 'FAILED';

export interface JobError {
  /** The line of the CSV file (the header is line 1), for imports. */
  row?: number;
  contactId?: string;
  message: string;
}

/** The status record of DESIGN.md; progress is saved after every chunk. */
export interface JobDoc extends Doc {
  projectId: string;
  type: JobType;
  status: JobStatus;
  total: number;
  processed: number;
  created: number;
  updated: number;
  failed: number;
  errors: JobError[];
  /** How many payload items are done: where a resumed run continues. */
  cursor: number;
  /** How many payload items there are (the rows rejected up front are not among them). */
  items: number;
  /**
   * An import whose file is stored and not read yet: its first step reads it into payload chunks
   * and sets `total` and the rejected rows (until then `total` is 0).
   */
  unreadFile?: true;
  createdAt: string;
  finishedAt: string | null;
}

export interface ImportRow {
  row: number;
  email: string;
  subscribed?: boolean;
  data: ContactData;
}

/** A job keeps this many errors; the `failed` count keeps counting past it. */
export const MAX_ERRORS = 1000;

/** Items per chunk: one delivery of `jobs.run` does one chunk. */
export const CHUNK = 50;

/**
 * The job's input, written once, one document per chunk (`<jobId>/<n>`), so progress updates
 * stay small and each step reads only its own items.
 */
export interface JobPayloadDoc extends Doc {
  jobId: string;
  items: ImportRow[] | string[];
  /**
   * Imports: the id each row's contact gets if the row creates it, saved before the chunk runs,
   * so a chunk run again after a crash counts the contacts its first run created as created.
   */
  newIds?: string[];
}

/** An import's CSV as uploaded (base64, so line numbers count the bytes sent), until its first step reads it. */
export interface JobFileDoc extends Doc {
  jobId: string;
  csv: string;
}

export const jobs = (store: DocumentStore) => store.collection<JobDoc>('jobs');
export const jobPayloads = (store: DocumentStore) => store.collection<JobPayloadDoc>('job_payloads');

export const jobFiles = (store: DocumentStore) => store.collection<JobFileDoc>('job_payloads');

export const fileId = (jobId: string) => `${jobId}/file`;
export const chunkId = (jobId: string, cursor: number) => `${jobId}/${Math.floor(cursor / CHUNK)}`;

export const jobView = (j: JobDoc) => ({
  id: j._id,
  type: j.type,
  status: j.status,
  total: j.total,
  processed: j.processed,
  created: j.created,
  updated: j.updated,
  failed: j.failed,
  errors: j.errors,
  createdAt: j.createdAt,
  finishedAt: j.finishedAt,
});
