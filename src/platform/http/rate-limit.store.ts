/**
 * The shared token buckets' store (rate-limit.ts, PostgreSQL): one row per key of `switchboard_rate_buckets`
 * (unlogged: a restart of the database refills every bucket, which only ever allows more).
 */
import { storeDb, type Db } from "../../db/client";

/** SQLSTATE read_only_sql_transaction. */
const READ_ONLY = "25006";

export function createRateBucketsStore(dbIn: Db) {
  const db = storeDb(dbIn);
  // Refilled and taken in one atomic upsert: concurrent instances queue on the row, never on the appliance's
  // write lock. `at` only moves forward, so an instance whose clock lags a little cannot refill a bucket twice.
  const take = db.sql(
    `INSERT INTO switchboard_rate_buckets AS b (key, tokens, at, allowed) VALUES (?1, CAST(?3 AS float8) - 1, ?2, true)
     ON CONFLICT (key) DO UPDATE SET
       tokens = LEAST(?3, b.tokens + GREATEST(0, ?2 - b.at) / 1000.0 * ?4) - CASE WHEN LEAST(?3, b.tokens + GREATEST(0, ?2 - b.at) / 1000.0 * ?4) >= 1 THEN 1 ELSE 0 END,
       at = GREATEST(b.at, ?2),
       allowed = LEAST(?3, b.tokens + GREATEST(0, ?2 - b.at) / 1000.0 * ?4) >= 1
     RETURNING tokens, allowed`,
  );
  return {
    /**
     * Refills `key`'s bucket up to `now` (ms) and takes a token when there is one: the tokens left, and whether
     * it did; null when the database refuses writes (read-only: a replica being promoted, maintenance).
     */
    async takeToken(key: string, now: number, burst: number, ratePerSecond: number): Promise<{ tokens: number; allowed: number } | null> {
      try {
        return (await take.get(key, now, burst, ratePerSecond)) as { tokens: number; allowed: number };
      } catch (e) {
        if ((e as { code?: string }).code !== READ_ONLY) throw e;
        return null;
      }
    },
  };
}
