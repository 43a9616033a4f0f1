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
 * The requests of one key that come in the same turn of the event loop take their tokens in one statement (one
 * round trip and one lock of the row for all of them): the first as many as it gave are allowed, in their order,
 * each told what it would have been told alone — the same answers as one take each.
 *
 * A database that refuses writes (read-only: a replica being promoted, maintenance) must not turn every read
 * into a 503: while it does, each instance limits from its own memory (per instance, as on SQLite).
 */
export function createSharedRateLimiter({ db, now }: { db: Db; now: () => number }): RateLimiter {
  const local = createRateLimiter({ now });
  const buckets = createRateBucketsStore(db);
  type Waiter = { limit: RateLimit; resolve(d: RateDecision): void; reject(e: unknown): void };
  const waiting = new Map<string, Waiter[]>();
  const takeFor = async (key: string, waiters: Waiter[]) => {
    const { limit } = waiters[0]!;
    try {
      const row = await buckets.takeTokens(key, now(), limit.burst, limit.ratePerSecond, waiters.length);
      waiters.forEach((w, i) => {
        if (!row) return w.resolve(local.take(key, w.limit));
        // The i-th was allowed if a token was left for it; what it leaves is what the later ones of the batch took too.
        const allowed = i < row.taken;
        w.resolve(decide(allowed, allowed ? row.tokens + row.taken - (i + 1) : row.tokens, w.limit));
      });
    } catch (e) {
      for (const w of waiters) w.reject(e);
    }
  };
  return {
    take(key, limit) {
      return new Promise<RateDecision>((resolve, reject) => {
        const batch = waiting.get(key);
        // (A key's limit is the same for all of its requests: its API key's.)
        if (batch) return void batch.push({ limit, resolve, reject });
        waiting.set(key, [{ limit, resolve, reject }]);
        setImmediate(() => {
          const waiters = waiting.get(key)!;
          waiting.delete(key);
          void takeFor(key, waiters);
        });
      });
    },
  };
}
