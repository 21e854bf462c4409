// The sending threads (apps/mailer/send-pool.ts) against a real SMTP server: every task sent once
// and answered once, more of them than the threads hold at a time; each failure as the mailer reads
// it; and what close() does to the tasks still waiting or held.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { RenderError, SendThreadLost, SmtpError, sendPool, type SendPool } from '../../apps/mailer/send-pool.ts';
import type { RenderTask } from '../../apps/mailer/render.ts';
import { emailDoc } from '../harness/emails.ts';
import { emailIdOf, startSmtpSink, type SmtpSink } from '../harness/smtp-sink.ts';

let dir: string;
let sink: SmtpSink;
let pool: SendPool;
let committed: string[];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'mailroom-send-pool-'));
  sink = await startSmtpSink();
  committed = [];
  // Two connections: the threads hold eight tasks each at a time, so most of the tasks below wait.
  pool = sendPool({ smtpUrl: sink.url, dataDir: dir, smtpConnections: 2 }, (emailId) => committed.push(emailId));
});

afterEach(async () => {
  await pool.close();
  await sink.close();
  await rm(dir, { recursive: true, force: true });
});

function task(n: number, to = `r${n}@example.com`, html = '<p>Hello</p>'): RenderTask {
  const email = emailDoc({
    _id: `email${n}`,
    projectId: null,
    kind: 'system',
    source: 'system',
    to,
    from: 'platform@mailroom.test',
    subject: `Message ${n}`,
    html,
    status: 'SENDING',
    createdAt: new Date(0).toISOString(),
  });
  return { email, content: { subject: email.subject!, html }, project: null, signing: null, attachments: [] };
}

it('sends every task once and answers each with its own outcome, more tasks than the threads hold', async () => {
  const n = 300;
  const outcomes = await Promise.all(Array.from({ length: n }, (_, i) => pool.send(task(i))));
  expect(outcomes.map((outcome) => outcome.envelope.to)).toEqual(Array.from({ length: n }, (_, i) => [`r${i}@example.com`]));
  expect(outcomes.every((outcome) => outcome.ok && outcome.committed && /^250/.test(outcome.response))).toBe(true);
  expect(outcomes.map((outcome) => outcome.subject)).toEqual(Array.from({ length: n }, (_, i) => `Message ${i}`));
  const arrived = sink.messages.map(emailIdOf).sort();
  expect(arrived).toEqual(Array.from({ length: n }, (_, i) => `email${i}`).sort());
  expect(committed.sort()).toEqual(arrived);
});

it('rejects a refused recipient with its SMTP answer and a message it cannot render with RenderError, and sends the rest', async () => {
  sink.rejectRecipients.add('gone@example.com');
  // A signing key that is no key: the message cannot be made.
  const unrenderable = { ...task(2), signing: { domainName: 'mailroom.test', keySelector: 's1', privateKeyPem: 'not a key' } };
  const [refused, failed, fine] = await Promise.allSettled([pool.send(task(1, 'gone@example.com')), pool.send(unrenderable), pool.send(task(3))]);
  expect(refused.status === 'rejected' && refused.reason).toBeInstanceOf(SmtpError);
  expect(((refused as PromiseRejectedResult).reason as SmtpError).responseCode).toBeGreaterThanOrEqual(500);
  expect(failed.status === 'rejected' && failed.reason).toBeInstanceOf(RenderError);
  expect(fine.status).toBe('fulfilled');
  expect(sink.messages.map(emailIdOf)).toEqual(['email3']);
  expect(committed).toEqual(['email3']);
});

it('close() fails the tasks a thread holds and those still waiting with SendThreadLost, and refuses new ones', async () => {
  // The server takes these messages and holds its answers: the tasks stay on the thread.
  for (let i = 0; i < 20; i++) sink.holdAnswers.add(`r${i}@example.com`);
  const sends = Promise.allSettled(Array.from({ length: 20 }, (_, i) => pool.send(task(i))));
  await sink.waitFor(() => sink.messages.length >= 2);
  await pool.close();
  const settled = await sends;
  expect(settled).toHaveLength(20);
  expect(settled.every((one) => one.status === 'rejected' && one.reason instanceof SendThreadLost)).toBe(true);
  await expect(pool.send(task(99))).rejects.toBeInstanceOf(SendThreadLost);
});

it('a pool closed and made again on the same data directory sends again', async () => {
  await pool.send(task(1));
  await pool.close();
  pool = sendPool({ smtpUrl: sink.url, dataDir: dir, smtpConnections: 2 }, (emailId) => committed.push(emailId));
  await pool.send(task(2));
  expect(sink.messages.map(emailIdOf)).toEqual(['email1', 'email2']);
});
