CREATE TABLE "balances" (
	"company_id" text PRIMARY KEY NOT NULL,
	"amount" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "balances" ADD CONSTRAINT "balances_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
-- Each company's balance as of its newest ledger entry (0 without one).
INSERT INTO "balances" ("company_id", "amount")
SELECT c."id", coalesce((SELECT l."balance_after" FROM "ledger_entries" l WHERE l."company_id" = c."id" ORDER BY l."id" DESC LIMIT 1), 0) FROM "companies" c;
--> statement-breakpoint
-- No cluster-wide lock (DESIGN §15): the caches' notifications no longer take the write lock nor bump a
-- counter row that every writer of a cached table queued on; a paid send no longer notifies at all (the
-- balance is its own row, read where it is needed). Keys notify only on changes that matter to a cache
-- (not the usage stamp flushed every 5 s), the ledger only on a credit; the payload names the table.
DROP TRIGGER "ledger_entries_data_version" ON "ledger_entries";
--> statement-breakpoint
CREATE TRIGGER "ledger_credits_data_version" AFTER INSERT ON "ledger_entries" FOR EACH ROW WHEN (NEW."kind" = 'credit') EXECUTE FUNCTION "switchboard_bump_data_version"();
--> statement-breakpoint
DROP TRIGGER "api_keys_data_version" ON "api_keys";
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "switchboard_bump_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('switchboard_data_version', TG_TABLE_NAME);
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "api_keys_data_version" AFTER INSERT OR DELETE OR UPDATE OF "company_id", "hash", "scopes", "allowed_ips", "rate_limit", "expires_at", "revoked_at" ON "api_keys" FOR EACH STATEMENT EXECUTE FUNCTION "switchboard_bump_data_version"();
--> statement-breakpoint
DROP TABLE "switchboard_data_version";
