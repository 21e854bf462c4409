import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileBlobStore } from '../../adapters/files/blobs.ts';
import { ensureRawMessageIndexes, keepRawMessage, rawExpiry, rawMessageOf, rawSweepPeriodMs, sweepRawMessages } from '../../domain/inbound/raw.ts';
import { embeddedPlatform, openStore } from '../harness/store.ts';

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'mailroom-raw-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
};

describe('how long a received message is kept', () => {
  it('INBOUND_RAW_RETENTION_DAYS after it came, fractions of a day allowed; 0 keeps none', () => {
    const now = new Date('2026-11-24T10:00:00.000Z');
    expect(rawExpiry(now, 30)).toBe('2026-12-24T10:00:00.000Z');
    expect(rawExpiry(now, 0.0001)).toBe('2026-11-24T10:00:08.640Z');
    expect(rawExpiry(now, 0)).toBeNull();
  });

  it('is swept a tenth of the retention apart, between a second and an hour', () => {
    expect(rawSweepPeriodMs(30)).toBe(3_600_000);
    expect(rawSweepPeriodMs(0.01)).toBe(86_400);
    expect(rawSweepPeriodMs(0.0001)).toBe(1_000);
    expect(rawSweepPeriodMs(0)).toBe(3_600_000);
  });
});

describe('blobs on files (embedded)', () => {
  it('give back the bytes put, until their expiry; a put replaces; the sweep removes what expired, and only that', async () => {
    const dir = await tempDir();
    const blobs = new FileBlobStore(join(dir, 'blobs'));
    const bytes = Buffer.from([0, 10, 13, 255, ...Buffer.from('\r\n.\r\n')]);
    await blobs.put('inbound/p1/abc', bytes, '2026-01-02T00:00:00.000Z');
    await blobs.put('inbound/p1/def', Buffer.from('later'), '2026-01-03T00:00:00.000Z');
    expect(await blobs.get('inbound/p1/abc', '2026-01-01T00:00:00.000Z')).toEqual(bytes);
    expect(await blobs.get('inbound/p1/abc', '2026-01-02T00:00:00.000Z'), 'expired').toBeNull();
    expect(await blobs.get('inbound/p1/none', '2026-01-01T00:00:00.000Z')).toBeNull();
    await blobs.put('inbound/p1/abc', Buffer.from('again'), '2026-01-02T00:00:00.000Z');
    expect((await blobs.get('inbound/p1/abc', '2026-01-01T00:00:00.000Z'))?.toString()).toBe('again');

    expect(await blobs.deleteExpired('2026-01-02T12:00:00.000Z')).toBe(1);
    expect(await readdir(join(dir, 'blobs'))).toHaveLength(1);
    expect((await blobs.get('inbound/p1/def', '2026-01-02T12:00:00.000Z'))?.toString()).toBe('later');
    await blobs.delete('inbound/p1/def');
    expect(await readdir(join(dir, 'blobs'))).toEqual([]);
  });

  it('a store that never kept anything sweeps nothing', async () => {
    expect(await new FileBlobStore(join(await tempDir(), 'blobs')).deleteExpired(new Date().toISOString())).toBe(0);
  });
});

describe('raw messages of email.received events', () => {
  const platform = async (retentionDays: string) => {
    const dir = await tempDir();
    const store = await openStore(dir);
    cleanups.push(() => store.close());
    await ensureRawMessageIndexes(store);
    return { p: embeddedPlatform(store, { DATA_DIR: dir, INBOUND_RAW_RETENTION_DAYS: retentionDays }), dir };
  };
  const raw = Buffer.from('From: a@b.example\r\nSubject: hi\r\n\r\nHello\r\n');

  it("one copy for the mailboxes of a project a message reached, each event finds it, another project's key does not", async () => {
    const { p, dir } = await platform('1');
    const now = new Date();
    await keepRawMessage(p, 'p1', ['e1', 'e2'], raw, 'digest-1', now);
    expect(await readdir(join(dir, 'blobs'))).toHaveLength(1);
    expect(await rawMessageOf(p, 'p1', 'e1')).toEqual(raw);
    expect(await rawMessageOf(p, 'p1', 'e2')).toEqual(raw);
    expect(await rawMessageOf(p, 'p2', 'e1')).toBeNull();
    expect(await rawMessageOf(p, 'p1', 'e3')).toBeNull();
  });

  it('after its retention the message is not served, and the sweep removes the bytes and what named them', async () => {
    const { p, dir } = await platform('1');
    const received = new Date('2026-01-01T00:00:00.000Z');
    await keepRawMessage(p, 'p1', ['e1'], raw, 'digest-1', received);
    expect(await rawMessageOf(p, 'p1', 'e1', '2026-01-01T23:59:59.999Z')).toEqual(raw);
    expect(await rawMessageOf(p, 'p1', 'e1', '2026-01-02T00:00:00.000Z')).toBeNull();
    expect(await sweepRawMessages(p, '2026-01-02T00:00:00.000Z')).toEqual({ blobs: 1, events: 1 });
    expect(await readdir(join(dir, 'blobs'))).toEqual([]);
  });

  it('INBOUND_RAW_RETENTION_DAYS=0 keeps nothing', async () => {
    const { p } = await platform('0');
    await keepRawMessage(p, 'p1', ['e1'], raw, 'digest-1');
    expect(await rawMessageOf(p, 'p1', 'e1')).toBeNull();
    expect(await sweepRawMessages(p)).toEqual({ blobs: 0, events: 0 });
  });
});
