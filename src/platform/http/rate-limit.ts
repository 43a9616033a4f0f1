/**
 * Token bucket per API key. Headers follow the IETF draft (draft-ietf-httpapi-ratelimit-headers):
 * `RateLimit-Policy: "default";q=<burst>;w=<seconds to refill a full bucket>` and
 * `RateLimit: "default";r=<remaining>;t=<seconds until the bucket is full again>`.
 *
 * Two stores, one arithmetic: in memory (SQLite: one appliance process serves all requests), or one row per
 * key in the database (PostgreSQL: several instances share each key's bucket, so a limit is never multiplied
 * by the number of instances — DESIGN §15).
 */
import type { Db } from "../../db/client";
import { createRateBucketsStore } from "./rate-limit.store";

export interface RateDecision {
  allowed: boolean;
  headers: Record<string, string>;
  retryAfterSeconds: number;
}
export interface RateLimit {
  ratePerSecond: number;
  burst: number;
}
export interface RateLimiter {
  /** In memory: the decision at once (the API guard's hot path on SQLite); in the database: its promise. */
  take(key: string, limit: RateLimit): RateDecision | Promise<RateDecision>;
}

/** The answer for a bucket left holding `tokens` after a take that was (not) allowed. */
function decide(allowed: boolean, tokens: number, { ratePerSecond, burst }: RateLimit): RateDecision {
  const window = Math.max(1, Math.ceil(burst / ratePerSecond));
  const untilFull = Math.ceil((burst - tokens) / ratePerSecond);
  return {
    allowed,
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil((1 - tokens) / ratePerSecond)),
    headers: {
      "ratelimit-policy": `"default";q=${burst};w=${window}`,
      ratelimit: `"default";r=${Math.floor(tokens)};t=${untilFull}`,
    },
  };
}

/** In memory: its decisions come at once (no promise). */
export function createRateLimiter({ now }: { now: () => number }): { take(key: string, limit: RateLimit): RateDecision } {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key, limit) {
      const t = now();
      const b = buckets.get(key) ?? { tokens: limit.burst, at: t };
      b.tokens = Math.min(limit.burst, b.tokens + (Math.max(0, t - b.at) / 1000) * limit.ratePerSecond);
      b.at = Math.max(b.at, t);
      const allowed = b.tokens >= 1;
      if (allowed) b.tokens -= 1;
      buckets.set(key, b);
      return decide(allowed, b.tokens, limit);
    },
  };
}

/**
 * The bucket as a row in the database (PostgreSQL; rate-limit.store.ts), refilled and taken in one atomic
 * upsert: concurrent instances queue on the row, never on the appliance's write lock. Time is the caller's clock.
 *
 * A database that refuses writes (read-only: a replica being promoted, maintenance) must not turn every read
 * into a 503: while it does, each instance limits from its own memory (per instance, as on SQLite).
 */
export function createSharedRateLimiter({ db, now }: { db: Db; now: () => number }): RateLimiter {
  const local = createRateLimiter({ now });
  const buckets = createRateBucketsStore(db);
  return {
    async take(key, limit) {
      const row = await buckets.takeToken(key, now(), limit.burst, limit.ratePerSecond);
      return row ? decide(!!row.allowed, row.tokens, limit) : local.take(key, limit);
    },
  };
}
