CREATE TABLE "media_usage" (
	"company_id" text PRIMARY KEY NOT NULL,
	"bytes" bigint NOT NULL
);
--> statement-breakpoint
-- Each company's media bytes as they are (the counter's first value; uploads and deletes keep it from here).
INSERT INTO "media_usage" ("company_id", "bytes")
SELECT "company_id", sum("size") FROM "media" GROUP BY "company_id";
