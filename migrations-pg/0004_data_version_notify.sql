-- Caches across instances by LISTEN/NOTIFY (DESIGN §15): the counter's trigger also notifies
-- `switchboard_data_version` (delivered at commit; several in one transaction fold into one), so an instance
-- invalidates its key, company and balance caches when another commits, without reading the counter on every
-- cached lookup. Inside a transaction the counter is still read under the write lock (src/db/client.ts).
CREATE OR REPLACE FUNCTION "switchboard_bump_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(1398210561);
  UPDATE "switchboard_data_version" SET "v" = "v" + 1 WHERE "id" = 1;
  PERFORM pg_notify('switchboard_data_version', '');
  RETURN NULL;
END $$;
