import { join } from 'node:path';
import { SqliteStore, type SqliteStoreOptions } from '../../adapters/sqlite/store.ts';

/** The embedded store as `npm start` opens it, in `dir` (a test's temporary directory). */
export const openStore = (dir: string, options?: SqliteStoreOptions): Promise<SqliteStore> => SqliteStore.open(join(dir, 'mailroom.db'), options);
