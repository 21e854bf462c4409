import { contactActorClient } from '../../actors/contact/client.ts';
import type { DocumentStore } from '../../ports/store.ts';
import type { Platform } from '../../runtime/platform.ts';
import { contacts } from '../contacts/collection.ts';
import { resolveContact } from '../contacts/service.ts';
import { AppError } from '../errors.ts';
import { newId, nowIso } from '../ids.ts';
import { chunkId, JOBS_TOPIC, jobPayloads, jobs, MAX_ERRORS, type ImportRow, type JobDoc, type JobError, type JobPayloadDoc } from './collection.ts';
import { readImportFile } from './read-file.ts';

type Outcome = 'created' | 'updated';

export async function ensureJobIndexes(store: DocumentStore): Promise<void> {
  await store.ensureIndexes('jobs', [{ keys: { projectId: 1 } }]);
  await store.ensureIndexes('job_payloads', [{ keys: { jobId: 1 } }]);
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

/**
 * One delivery of `jobs.run` does one chunk, then publishes the next: handlers stay short (a
 * delivery that outlived the broker's processing timeout would be handed out again while still
 * running), and jobs interleave. The cursor moves by compare-and-set, so a duplicate delivery
 * of the same step finds it moved and does nothing more.
 */
async function runJob(p: Platform, jobId: string): Promise<void> {
  const collection = jobs(p.store);
  const job = await collection.findOneAndUpdate(
    { _id: jobId, status: { $in: ['QUEUED', 'RUNNING'] } },
    { $set: { status: 'RUNNING' } },
  );
  if (!job) return; // finished already
  if (job.unreadFile) return readImportFile(p, job); // an import's first step: its rows are not read yet
  const at = job.cursor;

  if (at < job.items) {
    const stored = await jobPayloads(p.store).findOne({ _id: chunkId(jobId, at) });
    if (!stored) throw new Error(`job ${jobId} has lost its input at item ${at}`);
    const chunk = stored.items;
    const newIds = job.type === 'IMPORT' ? await plannedIds(p, stored) : [];
    const counts = { created: 0, updated: 0, failed: 0 };
    const errors: JobError[] = [];
    (await runChunk(p, job, chunk, newIds)).forEach((outcome, i) => {
      if (!(outcome instanceof AppError)) counts[outcome]++;
      else {
        counts.failed++;
        if (job.errors.length + errors.length < MAX_ERRORS) errors.push(errorFor(chunk[i], outcome.message));
      }
    });
    const advanced = await collection.updateOne(
      { _id: jobId, cursor: at },
      {
        $inc: { processed: chunk.length, ...counts },
        $set: { cursor: at + chunk.length },
        ...(errors.length ? { $push: { errors: { $each: errors } } } : {}),
      },
    );
    if (advanced.matched === 0) return; // another delivery took this step
    if (at + chunk.length < job.items) {
      await p.pubsub.publish(JOBS_TOPIC, { jobId });
      return;
    }
  }
  await collection.updateOne({ _id: jobId }, { $set: { status: 'COMPLETED', finishedAt: nowIso() } });
  await jobPayloads(p.store).deleteMany({ jobId });
}

/** How many contacts of a chunk are worked on at once. */
const PARALLEL = 16;

/**
 * Runs a chunk with contacts side by side, each contact's rows in file order (so the last row of
 * a repeated email wins, as it would one by one). A row's own problem (an AppError) is its
 * outcome; anything else is infrastructure trouble and fails the chunk, to be retried.
 */
async function runChunk(p: Platform, job: JobDoc, chunk: (ImportRow | string)[], newIds: string[]): Promise<(Outcome | AppError)[]> {
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
          outcomes[i] = await runItem(p, job, chunk[i], newIds[i]);
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

/**
 * The ids the rows of an import chunk give the contacts they create: planned and saved once,
 * before the chunk's first run, and the same for every run after (the first save wins).
 */
async function plannedIds(p: Platform, stored: JobPayloadDoc): Promise<string[]> {
  if (stored.newIds) return stored.newIds;
  const planned = stored.items.map(() => newId());
  const collection = jobPayloads(p.store);
  await collection.updateOne({ _id: stored._id, newIds: { $exists: false } }, { $set: { newIds: planned } });
  const saved = await collection.findOne({ _id: stored._id }, { projection: { newIds: 1 } });
  if (!saved?.newIds) throw new Error(`job ${stored.jobId}: the contact ids of chunk ${stored._id} were not saved`);
  return saved.newIds;
}

const errorFor = (item: ImportRow | string, message: string): JobError =>
  typeof item === 'string' ? { contactId: item, message } : { row: item.row, message };

async function runItem(p: Platform, job: JobDoc, item: ImportRow | string, idIfNew?: string): Promise<Outcome> {
  if (typeof item !== 'string') {
    const { id, created, doc } = await resolveContact(p, job.projectId, item.email, item.subscribed ?? true, idIfNew);
    await contactActorClient(p, id, doc).upsert({ subscribed: item.subscribed, data: item.data });
    return created ? 'created' : 'updated';
  }
  // By _id alone, then the project: FerretDB uses its primary key only for a bare _id filter.
  const owned = await contacts(p.store).findOne({ _id: item }, { projection: { projectId: 1 } });
  if (owned?.projectId !== job.projectId) throw new AppError('NOT_FOUND', 'Contact not found');
  const actor = contactActorClient(p, item);
  if (job.type === 'BULK_DELETE') await actor.delete();
  else await actor.setSubscribed(job.type === 'BULK_SUBSCRIBE');
  return 'updated';
}
