import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * FerretDB 1.24 asks PostgreSQL for `{_id: x}` as `_jsonb->$1 @> $2`, which its own `_id` index
 * (a btree on `_jsonb->'_id'`, used only by its updates and deletes) cannot serve: every read of
 * one document by id scanned its whole table, so a campaign's per-email reads grew with the
 * collections (34 emails/s at 20,000; bench/results/campaign-profile.md, "Distributed"). A GIN
 * index on the same expression serves `@>` (PostgreSQL plans each execution with the key as a
 * constant, so the expression matches). An event trigger adds one to each table FerretDB creates
 * (every table with its `_jsonb` column), and this adds the missing ones to tables made before.
 * FerretDB never sees these indexes (its catalogue is its own metadata table); dropping a
 * collection drops them with the table.
 */
const SQL = `
CREATE OR REPLACE FUNCTION mailroom_id_gin_index(target regclass) RETURNS void LANGUAGE plpgsql AS $fn$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = target AND attname = '_jsonb' AND NOT attisdropped) THEN
    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %s USING gin ((_jsonb->''_id'') jsonb_path_ops)',
      (SELECT left(relname, 50) || '_id_gin' FROM pg_class WHERE oid = target), target);
  END IF;
END $fn$;

CREATE OR REPLACE FUNCTION mailroom_id_gin_on_create() RETURNS event_trigger LANGUAGE plpgsql AS $fn$
DECLARE created record;
BEGIN
  FOR created IN SELECT objid FROM pg_event_trigger_ddl_commands() WHERE command_tag = 'CREATE TABLE' AND object_type = 'table' LOOP
    PERFORM mailroom_id_gin_index(created.objid::regclass);
  END LOOP;
END $fn$;

DROP EVENT TRIGGER IF EXISTS mailroom_id_gin;
CREATE EVENT TRIGGER mailroom_id_gin ON ddl_command_end WHEN TAG IN ('CREATE TABLE') EXECUTE FUNCTION mailroom_id_gin_on_create();

DO $do$
DECLARE t record;
BEGIN
  FOR t IN SELECT c.oid FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
    WHERE c.relkind = 'r' AND a.attname = '_jsonb' AND NOT a.attisdropped LOOP
    PERFORM mailroom_id_gin_index(t.oid::regclass);
  END LOOP;
END $do$;
`;

/** Installs the trigger (and the indexes of existing tables) in the cluster at `port`; idempotent. */
export async function indexFerretIds(binDir: string, port: number): Promise<void> {
  await run(join(binDir, 'psql'), ['-q', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', 'postgres', '-c', SQL]);
}
