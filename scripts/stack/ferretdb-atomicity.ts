/**
 * Whether the FerretDB of the distributed stack updates one document atomically, as MongoDB does:
 * two clients update the same document at once, `ROUNDS` times, and the script counts what was
 * lost. FerretDB 1.24 reads the matching documents, applies the update in Go and writes them back
 * by `_id` (its `msg_update.go`, `backends/postgresql` `UpdateAll`), with nothing tying the write
 * to what was read. Run it again when FerretDB is upgraded (docs/decisions.md, "Distributed store").
 *
 *   node --import ./runtime/load-typescript.mjs scripts/stack/ferretdb-atomicity.ts
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { runtimeBinaries } from './binaries.ts';
import { ferretdbSpec, postgresSpec } from './postgres.ts';
import { freePort, Supervisor } from './processes.ts';

const ROUNDS = 300;

const bin = runtimeBinaries();
const dir = await mkdtemp(join(tmpdir(), 'mailroom-ferretdb-atomicity-'));
const supervisor = new Supervisor(dir);
try {
  const [postgresPort, mongoPort] = [await freePort(), await freePort()];
  const postgres = await postgresSpec(bin.postgresBin, join(dir, 'postgres'), postgresPort);
  await supervisor.start(postgres);
  await supervisor.start(ferretdbSpec(bin.ferretdb, mongoPort, postgres.url));
  const [a, b] = [0, 1].map(() => new MongoClient(`mongodb://127.0.0.1:${mongoPort}/atomicity`));
  await Promise.all([a.connect(), b.connect()]);
  type Doc = { _id: string; status: string; opens?: number };
  const [one, other] = [a, b].map((client) => client.db().collection<Doc>('emails'));

  let lostStatus = 0;
  let lostCount = 0;
  let doubleClaims = 0;
  for (let i = 0; i < ROUNDS; i++) {
    // The mailer finishing an email while the API counts its open.
    await one.insertOne({ _id: `finish-${i}`, status: 'SENDING', opens: 0 });
    await Promise.all([
      one.updateOne({ _id: `finish-${i}`, status: 'SENDING' }, { $set: { status: 'DELIVERED' } }),
      other.updateOne({ _id: `finish-${i}` }, { $inc: { opens: 1 } }),
    ]);
    const after = await one.findOne({ _id: `finish-${i}` });
    if (after?.status !== 'DELIVERED') lostStatus++;
    if (after?.opens !== 1) lostCount++;
    // Two claims of one QUEUED document: one of them only may take it.
    await one.insertOne({ _id: `claim-${i}`, status: 'QUEUED' });
    const claims = await Promise.all([one, other].map((c) => c.updateOne({ _id: `claim-${i}`, status: 'QUEUED' }, { $set: { status: 'SENDING' } })));
    if (claims[0].modifiedCount + claims[1].modifiedCount > 1) doubleClaims++;
  }
  console.log(`${ROUNDS} rounds: status lost ${lostStatus}, $inc lost ${lostCount}, both of two conditional claims took the document ${doubleClaims}`);
  await Promise.all([a.close(), b.close()]);
} finally {
  await supervisor.stopAll();
  await rm(dir, { recursive: true, force: true });
}
