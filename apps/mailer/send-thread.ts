// The body of a send-pool thread: renders each email, signs it, and hands it to SMTP, with the
// commit record (commit-log.ts) written on this thread, in the tick its final "." goes out.
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { CommitLog } from './commit-log.ts';
import { renderEmail, type RenderTask } from './render.ts';
import { isFinalAnswer, smtpFailureOf } from './smtp-answers.ts';
import { createTransport } from './transport.ts';
import type { FromThread, SendOutcome, SendThreadData, ToThread } from './send-pool.ts';

const { smtpUrl, dataDir, connections, slots } = workerData as SendThreadData;

/**
 * This thread's slot: the lowest free one, holding its thread id until the pool frees it once the
 * thread is gone. Its log is the slot's, so each log has one writer, and a later thread of the
 * same slot carries on with it (a restart reads every slot's log).
 */
function claimSlot(): number {
  for (let slot = 0; slot < slots.length; slot++) {
    if (Atomics.compareExchange(slots, slot, 0, threadId) === 0) return slot;
  }
  throw new Error(`no free commit log slot among ${slots.length}`);
}

const commits = new CommitLog(dataDir, { name: `commits-${claimSlot()}` });
const transport = createTransport({ smtpUrl, dataDir }, connections);

async function send(task: RenderTask): Promise<SendOutcome> {
  const emailId = task.email._id;
  let message;
  try {
    message = await renderEmail(task);
  } catch (err) {
    return { ok: false, stage: 'render', error: { message: (err as Error).message ?? String(err) } };
  }
  let committed = false;
  try {
    const { messageId, response, kept } = await transport.send(message, () => {
      commits.commit(emailId);
      committed = true;
    });
    return { ok: true, committed, messageId, response, envelope: message.envelope, subject: message.subject, ...(kept ? { kept, text: message.text } : {}) };
  } catch (err) {
    // A final answer ends the email (BOUNCED or FAILED); after any other failure it is sent
    // again, so the record is taken back: the server did not keep the message.
    const final = isFinalAnswer(smtpFailureOf(err));
    if (committed && !final) commits.forget(emailId);
    const { message: text, responseCode, command, response } = err as Error & { responseCode?: number; command?: string; response?: string };
    return { ok: false, stage: 'smtp', committed: committed && final, error: { message: text ?? String(err), responseCode, command, response } };
  }
}

// The answers of one turn go back in one message, as the tasks came (send-pool.ts).
let answers: FromThread['done'] = [];
const answer = () => {
  const done = answers;
  answers = [];
  parentPort!.postMessage({ done } satisfies FromThread);
};

parentPort!.on('message', ({ tasks }: ToThread) => {
  for (const { id, task } of tasks) {
    void send(task)
      .catch((err: unknown): SendOutcome => ({ ok: false, stage: 'lost', error: { message: (err as Error)?.message ?? String(err) } }))
      .then((outcome) => {
        if (answers.push({ id, outcome }) === 1) setImmediate(answer);
      });
  }
});
