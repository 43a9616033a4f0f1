/** The shared send schedule's store (throttle.ts, PostgreSQL): one row per key of `switchboard_send_slots` (unlogged). */
import { type Db, storeDb } from "../db/client";

// "Now" is the database server's clock, so instances whose clocks differ still share one schedule.
const RESERVE = `WITH t AS (SELECT extract(epoch FROM clock_timestamp()) * 1000 AS now)
     INSERT INTO switchboard_send_slots AS s (key, next_at) SELECT ?1, t.now + ?2 FROM t
     ON CONFLICT (key) DO UPDATE SET next_at = GREATEST(s.next_at, (SELECT now FROM t)) + ?2
       WHERE GREATEST(s.next_at, (SELECT now FROM t)) - (SELECT now FROM t) <= ?3
     RETURNING GREATEST(0, next_at - ?2 - (SELECT now FROM t)) AS wait`;

export function createSendSlotsStore(dbIn: Db) {
  const db = storeDb(dbIn);
  const reserve = db.sql(RESERVE);
  return {
    /**
     * Books `key`'s next free slot and moves it on by `intervalMs`, in one atomic upsert: how long to wait for
     * it from the moment of the booking (ms), or null — nothing booked — when it is more than `maxAheadMs` away.
     */
    async book(key: string, intervalMs: number, maxAheadMs: number): Promise<number | null> {
      const row = (await reserve.get(key, intervalMs, maxAheadMs)) as { wait: number } | null;
      return row ? row.wait : null;
    },
  };
}
