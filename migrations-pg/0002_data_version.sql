-- PRAGMA data_version's twin for caches (src/db/read-cache.ts, openPostgres in src/db/client.ts): a counter
-- that every write to a cached table bumps, under the appliance's write lock (0x53570001 = WRITE_LOCK), so
-- an instance sees the commits of the others before it serves a cached key, company or balance.
CREATE TABLE "switchboard_data_version" ("id" bigint PRIMARY KEY CHECK ("id" = 1), "v" bigint NOT NULL);
--> statement-breakpoint
INSERT INTO "switchboard_data_version" ("id", "v") VALUES (1, 0);
--> statement-breakpoint
CREATE FUNCTION "switchboard_bump_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(1398210561);
  UPDATE "switchboard_data_version" SET "v" = "v" + 1 WHERE "id" = 1;
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "companies_data_version" AFTER INSERT OR UPDATE OR DELETE ON "companies" FOR EACH STATEMENT EXECUTE FUNCTION "switchboard_bump_data_version"();
--> statement-breakpoint
CREATE TRIGGER "api_keys_data_version" AFTER INSERT OR UPDATE OR DELETE ON "api_keys" FOR EACH STATEMENT EXECUTE FUNCTION "switchboard_bump_data_version"();
--> statement-breakpoint
CREATE TRIGGER "ledger_entries_data_version" AFTER INSERT OR UPDATE OR DELETE ON "ledger_entries" FOR EACH STATEMENT EXECUTE FUNCTION "switchboard_bump_data_version"();
