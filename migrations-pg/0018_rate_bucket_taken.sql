-- How many tokens the last take of a bucket took (src/platform/http/rate-limit.store.ts): the requests of one key
-- that arrive together take their tokens in one statement, which says how many it gave them.
ALTER TABLE "switchboard_rate_buckets" ADD COLUMN "taken" double precision NOT NULL DEFAULT 0;
