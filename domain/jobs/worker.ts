import { contactActorClient } from '../../actors/contact/client.ts';
import type { DocumentStore } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { contacts } from '../contacts/collection.ts';
import { resolveContact } from '../contacts/service.ts';
import { AppError } from '../errors.ts';
import { nowIso } from '../ids.ts';
import { JOBS_TOPIC, jobPayloads, jobs, type ImportRow, type JobDoc, type JobError } from './collection.ts';

/** Progress is saved after each chunk; a crash repeats at most one chunk, and every step is idempotent. */
const CHUNK = 50;
/** A job keeps this many row errors; the `failed` count keeps counting past it. */
const MAX_ERRORS = 1000;

type Outcome = 'created' | 'updated';

export async function ensureJobIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('jobs', [{ keys: { projectId: 1 } }]);
}

/** Infrastructure failures are retried by redelivery; after this many the job is FAILED, not left RUNNING. */
const GIVE_UP_AFTER_ATTEMPT = 5;

/** Runs queued jobs from the `jobs.run` topic; a redelivered message resumes from the saved cursor. */
export function startJobWorker(p: Platform): void {
  p.pubsub.subscribe<{ jobId: string }>(JOBS_TOPIC, async ({ jobId }, delivery) => {
    try {
      await runJob(p, jobId);
    } catch (err) {
      if (delivery.attempt < GIVE_UP_AFTER_ATTEMPT) throw err;
      p.log.error({ jobId, err: (err as Error).message, attempt: delivery.attempt }, 'job failed for good');
      await jobs(p.store).updateOne(
        { _id: jobId, status: { $in: ['QUEUED', 'RUNNING'] } },
        { $set: { status: 'FAILED', finishedAt: nowIso() }, $push: { errors: { message: `Job stopped: ${(err as Error).message}` } } },
      );
    }
  });
}

async function runJob(p: Platform, jobId: string): Promise<void> {
  const collection = jobs(p.store);
  const job = await collection.findOneAndUpdate(
    { _id: jobId, status: { $in: ['QUEUED', 'RUNNING'] } },
    { $set: { status: 'RUNNING' } },
  );
  if (!job) return; // finished already
  const payload = await jobPayloads(p.store).findOne({ _id: jobId });
  const items = payload?.items ?? [];
  let keptErrors = job.errors.length;

  for (let at = job.cursor; at < items.length; at += CHUNK) {
    const chunk = items.slice(at, at + CHUNK);
    const counts = { created: 0, updated: 0, failed: 0 };
    const errors: JobError[] = [];
    (await runChunk(p, job, chunk)).forEach((outcome, i) => {
      if (!(outcome instanceof AppError)) counts[outcome]++;
      else {
        counts.failed++;
        if (keptErrors + errors.length < MAX_ERRORS) errors.push(errorFor(chunk[i], outcome.message));
      }
    });
    keptErrors += errors.length;
    await collection.updateOne(
      { _id: jobId },
      {
        $inc: { processed: chunk.length, ...counts },
        $set: { cursor: at + chunk.length },
        ...(errors.length ? { $push: { errors: { $each: errors } } } : {}),
      },
    );
    // Let requests in between chunks: with a store that answers without real I/O, a whole job
    // would otherwise run as one stretch of microtasks and hold the API until it finished.
    await new Promise((resolve) => setImmediate(resolve));
  }
  await collection.updateOne({ _id: jobId }, { $set: { status: 'COMPLETED', finishedAt: nowIso() } });
  await jobPayloads(p.store).deleteOne({ _id: jobId });
}

/** How many contacts of a chunk are worked on at once. */
const PARALLEL = 16;

/**
 * Runs a chunk with contacts side by side, each contact's rows in file order (so the last row of
 * a repeated email wins, as it would one by one). A row's own problem (an AppError) is its
 * outcome; anything else is infrastructure trouble and fails the chunk, to be retried.
 */
async function runChunk(p: Platform, job: JobDoc, chunk: (ImportRow | string)[]): Promise<(Outcome | AppError)[]> {
  const lanes = new Map<string, number[]>();
  chunk.forEach((item, i) => {
    const key = typeof item === 'string' ? item : item.email;
    lanes.set(key, [...(lanes.get(key) ?? []), i]);
  });
  const waiting = [...lanes.values()];
  const outcomes: (Outcome | AppError)[] = new Array(chunk.length);
  const worker = async () => {
    for (let lane = waiting.shift(); lane; lane = waiting.shift()) {
      for (const i of lane) {
        try {
          outcomes[i] = await runItem(p, job, chunk[i]);
        } catch (err) {
          if (!(err instanceof AppError)) throw err;
          outcomes[i] = err;
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, waiting.length) }, worker));
  return outcomes;
}

const errorFor = (item: ImportRow | string, message: string): JobError =>
  typeof item === 'string' ? { contactId: item, message } : { row: item.row, message };

async function runItem(p: Platform, job: JobDoc, item: ImportRow | string): Promise<Outcome> {
  if (typeof item !== 'string') {
    const { id, created } = await resolveContact(p, job.projectId, item.email, item.subscribed ?? true);
    await contactActorClient(p, id).upsert({ subscribed: item.subscribed, data: item.data });
    return created ? 'created' : 'updated';
  }
  const owned = await contacts(p.store).findOne({ _id: item, projectId: job.projectId }, { projection: { _id: 1 } });
  if (!owned) throw new AppError('NOT_FOUND', 'Contact not found');
  const actor = contactActorClient(p, item);
  if (job.type === 'BULK_DELETE') await actor.delete();
  else await actor.setSubscribed(job.type === 'BULK_SUBSCRIBE');
  return 'updated';
}
