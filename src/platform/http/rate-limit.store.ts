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
  // ?5 tokens are asked for (the requests of one key that came together): as many are taken as the refilled
  // bucket holds whole ones, at most ?5 — what taking them one by one would have given — and `taken` says how many.
  const burst = "CAST(?3 AS float8)";
  const wanted = "CAST(?5 AS float8)";
  const refilled = `LEAST(${burst}, b.tokens + GREATEST(0, ?2 - b.at) / 1000.0 * ?4)`;
  const taken = (tokens: string) => `GREATEST(0, LEAST(${wanted}, floor(${tokens})))`;
  const take = db.sql(
    `INSERT INTO switchboard_rate_buckets AS b (key, tokens, at, allowed, taken)
       VALUES (?1, ${burst} - ${taken(burst)}, ?2, ${burst} >= 1, ${taken(burst)})
     ON CONFLICT (key) DO UPDATE SET
       tokens = ${refilled} - ${taken(refilled)},
       at = GREATEST(b.at, ?2),
       allowed = ${refilled} >= 1,
       taken = ${taken(refilled)}
     RETURNING tokens, taken`,
  );
  return {
    /**
     * Refills `key`'s bucket up to `now` (ms) and takes up to `wanted` tokens, as many as there are whole ones:
     * the tokens left and how many it took; null when the database refuses writes (read-only: a replica being
     * promoted, maintenance).
     */
    async takeTokens(key: string, now: number, burst: number, ratePerSecond: number, wanted: number): Promise<{ tokens: number; taken: number } | null> {
      try {
        return (await take.get(key, now, burst, ratePerSecond, wanted)) as { tokens: number; taken: number };
      } catch (e) {
        if ((e as { code?: string }).code !== READ_ONLY) throw e;
        return null;
      }
    },
  };
}
