/**
 * bench/store.ts's loader, run as a child process (so the benchmark itself stays small, and the
 * journal store's loader gets the heap it needs): writes the data of bench/store-data.ts straight
 * into a stopped platform's store files. Its settings come in BENCH_STORE_LOAD (JSON):
 *
 *   { store: 'sqlite' | 'journal', dataDir, projectId, contacts, events, tree? }
 *
 * - sqlite: opens DATA_DIR/mailroom.db with SqliteStore, as runtime/embedded.ts does, declares
 *   the platform's indexes on the collections written here (the same ensure*Indexes functions
 *   runtime/boot.ts calls; they exist already from the platform's first start, so this only
 *   checks them), and inserts with insertMany, which maintains the indexes as it goes.
 * - journal: opens DATA_DIR/store with the EmbeddedStore of the tree `tree` (a checkout of the
 *   last commit that had it) and inserts with its insertMany, which appends the lines to
 *   store.journal. Its indexes live in memory only (the platform builds them at start), so none
 *   are declared here.
 *
 * Progress goes to stderr; the process exits 0 once the store is closed (durable).
 */
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SqliteStore } from '../adapters/sqlite/store.ts';
import { ensureContactIndexes } from '../domain/contacts/collection.ts';
import { ensureEventIndexes } from '../domain/events/collection.ts';
import type { DocumentStore } from '../ports/store.ts';
import { EventTally, contactBatches, dataFields, eventBatches } from './store-data.ts';

export interface LoadSettings {
  store: 'sqlite' | 'journal';
  dataDir: string;
  projectId: string;
  contacts: number;
  events: number;
  /** The journal store's source tree. */
  tree?: string;
}

const BATCH = 10_000;
/**
 * The loader's own SQLite page cache (the platform's default is 64 MiB): events arrive in time
 * order but their contacts at random, so the (projectId, contactId) index takes inserts all over
 * its pages; with a cache that holds the index, the load does not wait on reads.
 */
const LOADER_CACHE_MB = 2048;

async function openStore(settings: LoadSettings): Promise<DocumentStore> {
  if (settings.store === 'sqlite') {
    const store = await SqliteStore.open(join(settings.dataDir, 'mailroom.db'), { cacheMb: LOADER_CACHE_MB });
    await ensureContactIndexes(store);
    await ensureEventIndexes(store);
    return store;
  }
  if (!settings.tree) throw new Error('the journal store needs its source tree');
  const { EmbeddedStore } = (await import(join(settings.tree, 'adapters/embedded/store.ts'))) as {
    EmbeddedStore: { open(dir: string): Promise<DocumentStore> };
  };
  return EmbeddedStore.open(join(settings.dataDir, 'store'));
}

async function main(): Promise<void> {
  const settings = JSON.parse(process.env.BENCH_STORE_LOAD ?? '') as LoadSettings;
  const { projectId, contacts, events } = settings;
  const started = performance.now();
  const seconds = () => ((performance.now() - started) / 1000).toFixed(0);
  const store = await openStore(settings);
  const tally = new EventTally(contacts);
  let done = 0;
  const step = Math.max(BATCH, Math.round(events / 10 / BATCH) * BATCH);
  for (const batch of eventBatches(projectId, contacts, events, tally, BATCH)) {
    await store.collection('events').insertMany(batch);
    done += batch.length;
    if (done % step === 0) console.error(`  [load ${settings.store}] ${done} events (${seconds()} s)`);
  }
  done = 0;
  for (const batch of contactBatches(projectId, contacts, tally, BATCH)) {
    await store.collection('contacts').insertMany(batch.contacts);
    // The journal store's version (6055d3e) kept a copy of each contact as its actor's state;
    // this version's ContactActor reads the contact document itself.
    if (settings.store === 'journal') await store.collection('_actor_state').insertMany(batch.actorStates);
    done += batch.contacts.length;
    if (done % 100_000 === 0) console.error(`  [load ${settings.store}] ${done} contacts (${seconds()} s)`);
  }
  await store.collection('data_fields').insertMany(dataFields(projectId));
  await store.close();
  console.error(`  [load ${settings.store}] ${contacts} contacts, ${events} events written in ${seconds()} s`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : err);
    process.exit(1);
  },
);
