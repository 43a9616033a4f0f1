-- Limits shared by every instance on the database (DESIGN §15): API keys' token buckets
-- (src/platform/http/rate-limit.ts) and channel accounts' send schedules (src/platform/throttle.ts).
-- UNLOGGED: no WAL, no fsync per request; after a database crash they come back empty, which only lets a
-- key or an account start from a full bucket / a free slot.
CREATE UNLOGGED TABLE "switchboard_rate_buckets" ("key" text PRIMARY KEY, "tokens" double precision NOT NULL, "at" bigint NOT NULL, "allowed" boolean NOT NULL);
--> statement-breakpoint
CREATE UNLOGGED TABLE "switchboard_send_slots" ("key" text PRIMARY KEY, "next_at" double precision NOT NULL);
