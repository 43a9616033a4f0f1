-- What the generated schema (src/db/postgres/schema.gen.ts) cannot say. Part of the PostgreSQL baseline:
-- 0000_init + this file = SQLite's migrations 0000..0008, without the SQLite-only FTS5 objects of 0001.
--
-- contacts.seq is SQLite's rowid alias (`integer primary key`): SQLite numbers it when a row is inserted
-- without it or with NULL. A column default covers the first case only; the trigger covers an explicit NULL.
CREATE SEQUENCE "contacts_seq_seq" AS bigint OWNED BY "contacts"."seq";--> statement-breakpoint
ALTER TABLE "contacts" ALTER COLUMN "seq" SET DEFAULT nextval('contacts_seq_seq');--> statement-breakpoint
CREATE FUNCTION "contacts_seq_number"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.seq IS NULL THEN
		NEW.seq := nextval('contacts_seq_seq');
	END IF;
	RETURN NEW;
END;
$$;--> statement-breakpoint
CREATE TRIGGER "contacts_seq_number" BEFORE INSERT ON "contacts" FOR EACH ROW EXECUTE FUNCTION "contacts_seq_number"();--> statement-breakpoint
-- Name search (SQLite: the FTS5 table contact_search). Queries must use this exact expression to use the index:
-- to_tsvector('simple', coalesce(first_name,'') || ' ' || coalesce(last_name,''))
CREATE INDEX "contacts_name_search_idx" ON "contacts" USING gin (to_tsvector('simple', coalesce(first_name,'') || ' ' || coalesce(last_name,'')));
