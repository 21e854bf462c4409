import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommitLog, CommittedEmails } from '../../apps/mailer/commit-log.ts';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mailroom-commits-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the mailer commit log', () => {
  it('knows what it committed and forgot, in this process and the next', () => {
    const log = new CommitLog(dir);
    log.commit('a');
    log.commit('b');
    log.forget('b');
    log.forget('never'); // nothing to take back: nothing written
    expect([log.has('a'), log.has('b')]).toEqual([true, false]);
    log.close();
    log.commit('c'); // after close: opened again
    const next = new CommitLog(dir);
    expect(['a', 'b', 'c', 'never'].map((id) => next.has(id))).toEqual([true, false, true, false]);
    expect(fs.readFileSync(path.join(dir, 'mailer', 'commits.log'), 'utf8')).toBe('a\nb\n-b\nc\n');
    log.close();
    next.close();
  });

  it('keeps two files: what the one before the last held is forgotten, also in memory', () => {
    const log = new CommitLog(dir, { maxBytes: 10 });
    for (const id of ['id-1', 'id-2', 'id-3']) log.commit(id); // 15 bytes: the next record starts a file
    log.commit('id-4');
    log.forget('id-1'); // in the previous file: taken back from the current one
    expect(['id-1', 'id-2', 'id-3', 'id-4'].map((id) => log.has(id))).toEqual([false, true, true, true]);
    const reread = new CommitLog(dir, { maxBytes: 10 });
    expect(['id-1', 'id-2', 'id-3', 'id-4'].map((id) => reread.has(id))).toEqual([false, true, true, true]);
    for (const id of ['id-5', 'id-6', 'id-7']) log.commit(id); // current passes 10 bytes: rotates again
    expect(['id-2', 'id-3', 'id-4', 'id-5', 'id-7'].map((id) => log.has(id))).toEqual([false, false, true, true, true]);
    expect(fs.readdirSync(path.join(dir, 'mailer')).sort()).toEqual(['commits.log', 'commits.previous.log']);
    log.close();
    reread.close();
  });

  it('ends a record a crash tore before writing the next, and does not count it as committed', () => {
    fs.mkdirSync(path.join(dir, 'mailer'));
    const file = path.join(dir, 'mailer', 'commits.log');
    fs.writeFileSync(file, 'a\nb\nhalf-an-i'); // killed in the middle of a record
    const log = new CommitLog(dir);
    expect([log.has('a'), log.has('b'), log.has('half-an-i')]).toEqual([true, true, false]);
    log.commit('c');
    log.close();
    expect(fs.readFileSync(file, 'utf8')).toBe('a\nb\nhalf-an-i\n-half-an-i\nc\n');
    const next = new CommitLog(dir);
    expect(['a', 'b', 'c', 'half-an-ic', 'half-an-i'].map((id) => next.has(id))).toEqual([true, true, true, false, false]);
    next.close();
  });

  it('keeps its files to the account that runs the mailer', () => {
    const log = new CommitLog(dir);
    log.commit('a');
    log.close();
    expect(fs.statSync(path.join(dir, 'mailer')).mode & 0o777).toBe(0o700);
    expect(fs.statSync(path.join(dir, 'mailer', 'commits.log')).mode & 0o777).toBe(0o600);
  });

  it("the event loop knows every thread's log, the one from before threads, and what threads reported since", () => {
    const old = new CommitLog(dir); // written before sending moved to threads
    old.commit('legacy');
    old.close();
    const thread0 = new CommitLog(dir, { name: 'commits-0', maxBytes: 10 });
    for (const id of ['id-1', 'id-2', 'id-3', 'id-4']) thread0.commit(id); // id-1..3 in commits-0.previous.log
    thread0.forget('id-2');
    const thread1 = new CommitLog(dir, { name: 'commits-1' });
    thread1.commit('other');
    const committed = new CommittedEmails(dir);
    expect(['legacy', 'id-1', 'id-2', 'id-3', 'id-4', 'other', 'never'].map((id) => committed.has(id))).toEqual([true, true, false, true, true, true, false]);
    thread1.commit('later'); // a thread that could not report it: known after a reload
    expect(committed.has('later')).toBe(false);
    committed.reload();
    expect(committed.has('later')).toBe(true);
    committed.reported('fresh');
    expect(committed.has('fresh')).toBe(true);
    committed.finished('fresh');
    expect(committed.has('fresh')).toBe(false);
    thread0.close();
    thread1.close();
  });
});
