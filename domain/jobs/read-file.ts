import type { Platform } from '../../runtime/platform.ts';
import { DuplicateKeyError } from '../../ports/store.ts';
import { AppError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { fileId, JOBS_TOPIC, jobFiles, jobPayloads, jobs, MAX_ERRORS, type JobDoc, type JobPayloadDoc } from './collection.ts';
import { readContactsCsv } from './csv.ts';
import { chunksOf } from './service.ts';

/**
 * An import's first step: reads the stored file into payload chunks and sets the job's total and
 * rejected rows, or fails the job when the file cannot be imported (nothing imported then). Run
 * again after a crash or by a duplicate delivery, it writes the same chunks, keeps those written
 * (with the contact ids a started chunk planned), and only the first to finish moves the job on.
 */
export async function readImportFile(p: Platform, job: JobDoc): Promise<void> {
  const file = await jobFiles(p.store).findOne({ _id: fileId(job._id) });
  if (!file) throw new Error(`job ${job._id} has lost its file`);
  let read: Awaited<ReturnType<typeof readContactsCsv>>;
  try {
    read = await readContactsCsv(Buffer.from(file.csv, 'base64'));
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    const failed = await jobs(p.store).updateOne(
      { _id: job._id, unreadFile: true },
      { $set: { status: 'FAILED', finishedAt: nowIso(), errors: [{ message: fileProblem(err) }] }, $unset: { unreadFile: '' } },
    );
    if (failed.matched > 0) await jobPayloads(p.store).deleteMany({ jobId: job._id });
    return;
  }
  const { rows, rejected } = read;
  await insertAbsent(p, chunksOf(job._id, rows));
  const started = await jobs(p.store).updateOne(
    { _id: job._id, unreadFile: true },
    {
      $set: { total: rows.length + rejected.length, processed: rejected.length, failed: rejected.length, errors: rejected.slice(0, MAX_ERRORS), items: rows.length },
      $unset: { unreadFile: '' },
    },
  );
  if (started.matched === 0) return; // another delivery read it first
  await jobFiles(p.store).deleteOne({ _id: file._id });
  await p.pubsub.publish(JOBS_TOPIC, { jobId: job._id });
}

/** The file-level problem as one error line, with the columns it names (a job error has no field list). */
const fileProblem = (err: AppError) =>
  [err.message, ...(err.fieldErrors ?? []).filter((f) => f.message !== err.message).map((f) => `${f.field}: ${f.message}`)].join('; ');

/** Writes the chunks that are not there yet; one already there is kept as it is (it may hold planned ids). */
async function insertAbsent(p: Platform, chunks: JobPayloadDoc[]): Promise<void> {
  const payloads = jobPayloads(p.store);
  try {
    await payloads.insertMany(chunks);
  } catch (err) {
    if (!(err instanceof DuplicateKeyError)) throw err;
    for (const { _id, ...chunk } of chunks) await payloads.updateOne({ _id }, { $setOnInsert: chunk }, { upsert: true });
  }
}
