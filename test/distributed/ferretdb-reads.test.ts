// Reads by id on the stack's MongoDB-wire server (FerretDB 1.24 on PostgreSQL) cost one index
// lookup, not a pass over the collection: a campaign reads a few documents by id per email, so a
// scan per read made its cost grow with the data (bench/results/campaign-profile.md, "Distributed").
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoStore } from '../../adapters/mongo/store.ts';
import { SqliteStore } from '../../adapters/sqlite/store.ts';
import { claim, claimable } from '../../domain/mail/claims.ts';
import { DuplicateKeyError, type DocumentStore } from '../../ports/store.ts';
import { runtimeBinaries } from '../../scripts/stack/binaries.ts';
import { ferretdbSpec, postgresSpec } from '../../scripts/stack/postgres.ts';
import { freePort, Supervisor } from '../../scripts/stack/processes.ts';

const run = promisify(execFile);
const DOCS = 2_000;

describe('reads by id on FerretDB', () => {
  let dir: string;
  let supervisor: Supervisor;
  let store: MongoStore;
  /** Rows PostgreSQL has read by sequential scans of the collection's table so far. */
  let rowsScanned: (collection?: string) => Promise<number>;

  beforeAll(async () => {
    const bin = runtimeBinaries();
    dir = await mkdtemp(join(tmpdir(), 'mailroom-ferret-'));
    supervisor = new Supervisor(dir);
    const [pgPort, mongoPort] = [await freePort(), await freePort()];
    const postgres = await postgresSpec(bin.postgresBin, join(dir, 'postgres'), pgPort);
    await supervisor.start(postgres);
    await supervisor.start(ferretdbSpec(bin.ferretdb, mongoPort, postgres.url));
    store = await MongoStore.connect(`mongodb://127.0.0.1:${mongoPort}/reads`);
    await store.collection('things').insertMany(Array.from({ length: DOCS }, (_, i) => ({ _id: `thing-${i}`, n: i })));
    rowsScanned = async (collection = 'things') => {
      const sql = `select coalesce(sum(seq_tup_read), 0) from pg_stat_user_tables where schemaname = 'reads' and relname like '${collection}%'`;
      const { stdout } = await run(join(bin.postgresBin, 'psql'), ['-At', '-h', '127.0.0.1', '-p', String(pgPort), '-U', 'postgres', '-d', 'postgres', '-c', sql]);
      return Number(stdout.trim());
    };
  });
  afterAll(async () => {
    await store?.close();
    await supervisor?.stopAll();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** An idle backend reports its statistics within 10 s (PGSTAT_IDLE_INTERVAL): wait for them. */
  const settled = () => new Promise((resolve) => setTimeout(resolve, 11_000));
  const scannedBy = async (reads: () => Promise<unknown>, collection?: string) => {
    await settled();
    const before = await rowsScanned(collection);
    await reads();
    await settled();
    return (await rowsScanned(collection)) - before;
  };

  it('a read of one document by id scans no table', async () => {
    const things = store.collection<{ _id: string; n: number }>('things');
    const found: unknown[] = [];
    // One after another: the same statement again and again on FerretDB's connections.
    const scanned = await scannedBy(async () => {
      for (let i = 0; i < 40; i++) found.push(await things.findOne({ _id: `thing-${i * 47}` }));
    });
    expect(found.map((d) => (d as { n: number }).n)).toEqual(Array.from({ length: 40 }, (_, i) => i * 47));
    expect(scanned).toBeLessThan(DOCS);
  });

  it('a read of a few documents by their ids finds each once and scans no table', async () => {
    const things = store.collection<{ _id: string; n: number }>('things');
    let found: { _id: string; n: number }[] = [];
    const scanned = await scannedBy(async () => {
      found = await things.find({ _id: { $in: ['thing-5', 'thing-1999', 'thing-5', 'nothing'] } }, { projection: { n: 1 } });
    });
    expect(found.map((d) => d.n).sort((a, b) => a - b)).toEqual([5, 1999]);
    expect(scanned).toBeLessThan(DOCS);
  });

  it('a count of one document by id, its other conditions under an $and, scans no table', async () => {
    // GET /contacts/:id/segments asks each DYNAMIC segment's query narrowed to the contact this way
    // (segments/of-contact.ts); with the id inside the `$and`, FerretDB read the whole collection.
    const things = store.collection<{ _id: string; n: number }>('things');
    let counts: number[] = [];
    const scanned = await scannedBy(async () => {
      counts = [
        await things.countDocuments({ _id: 'thing-7', $and: [{ n: { $gte: 5 } }] }),
        await things.countDocuments({ _id: 'thing-7', $and: [{ n: { $gte: 8 } }] }),
      ];
    });
    expect(counts).toEqual([1, 0]);
    expect(scanned).toBeLessThan(DOCS);
  });

  // The mailer's claim (domain/mail/claims.ts): an `$or` of statuses, `$exists` and a time compared
  // as text, by id; FerretDB and the embedded store take the same emails, and the read scans no table.
  it("the mailer's claim takes the same emails on FerretDB as on the embedded store, by id", async () => {
    const now = new Date('2026-06-01T12:00:00.000Z');
    const until = (ms: number) => new Date(now.getTime() + ms).toISOString();
    const docs = [
      { _id: 'queued', status: 'QUEUED' },
      { _id: 'held', status: 'SENDING', claimedBy: 'other', claimedUntil: until(60_000) },
      { _id: 'mine', status: 'SENDING', claimedBy: 'me', claimedUntil: until(60_000) },
      { _id: 'lapsed', status: 'SENDING', claimedBy: 'other', claimedUntil: until(-1) },
      { _id: 'unleased', status: 'SENDING' },
      { _id: 'waiting', status: 'SENDING', retryAt: until(1_000) },
      { _id: 'due', status: 'SENDING', retryAt: 'lease-1' },
      { _id: 'delivered', status: 'DELIVERED' },
    ];
    const sqlite = await SqliteStore.open(join(dir, 'claims.db'));
    try {
      const taken = async (s: DocumentStore) => {
        await s.collection('claims').insertMany(docs.map((d) => ({ ...d })));
        const out: string[] = [];
        for (const { _id } of docs) {
          const email = await s.collection<{ _id: string; claimedBy?: string }>('claims').findOneAndUpdate(claimable(_id, 'me', now, _id === 'due' ? 'lease-1' : undefined), claim('me', now));
          if (email) out.push(`${email._id}:${email.claimedBy}`);
        }
        return out;
      };
      // Beside as many final emails as the other reads have things, which a scan would read.
      await store.collection('claims').insertMany(Array.from({ length: DOCS }, (_, i) => ({ _id: `final-${i}`, status: 'DELIVERED' })));
      let onFerret: string[] = [];
      const scanned = await scannedBy(async () => (onFerret = await taken(store)), 'claims');
      expect(onFerret).toEqual(['queued:me', 'mine:me', 'lapsed:me', 'unleased:me', 'due:me']);
      expect(await taken(sqlite)).toEqual(onFerret);
      expect(scanned).toBeLessThan(DOCS);
    } finally {
      await sqlite.close();
    }
  });

  // insertNew (a contact turn's events, given ids) on the same server: an id there already is skipped.
  it('insertNew inserts the documents whose ids are free, and still refuses a duplicate on another unique index', async () => {
    const marks = store.collection<{ _id: string; k: string }>('marks');
    await store.ensureIndexes('marks', [{ keys: { k: 1 }, unique: true }]);
    expect(await marks.insertNew([{ _id: 'a', k: 'a' }, { _id: 'b', k: 'b' }])).toEqual(['a', 'b']);
    expect(await marks.insertNew([{ _id: 'a', k: 'x' }, { _id: 'c', k: 'c' }, { _id: 'b', k: 'y' }])).toEqual(['c']);
    expect((await marks.find({})).map((d) => [d._id, d.k]).sort()).toEqual([['a', 'a'], ['b', 'b'], ['c', 'c']]);
    await expect(marks.insertNew([{ _id: 'd', k: 'a' }])).rejects.toBeInstanceOf(DuplicateKeyError);
    expect(await marks.insertNew([])).toEqual([]);
  });
});
